// rpcd-client as an ES module: `import { spawnDaemon } from 'rpcd-client'` (the same objects as require()).
import client from './rpcdClient.js';

export const {
  RpcdClient, DaemonExitedError, spawnDaemon, daemonCommandFromEnv, withoutRelativePythonPath, DEFAULT_COMMAND,
  PROTOCOL_VERSION,
} = client;
export default client;
