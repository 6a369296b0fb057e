// Pi's RpcClient spawns `node <cliPath> --mode rpc ...`: this cliPath runs rpcd instead (the argv
// before Pi's arguments comes from $RPCD_SHIM_ARGV) with the same stdio, passing on the signals
// the client sends and ending as rpcd ends.
import { spawn } from "node:child_process";

const [command, ...leading] = JSON.parse(process.env.RPCD_SHIM_ARGV);
const child = spawn(command, [...leading, ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
