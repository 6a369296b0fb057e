// The extension host's reader thread: every line rpcd writes to the host's stdin, read with
// blocking reads and handed to the main thread through `port`, in order. Each line also sets
// `sync[0]` and wakes a main thread waiting in a synchronous call (Pi's `pi.getActiveTools()`,
// `ctx.sessionManager.getEntries()` ... answer at once in TypeScript), and posts a tick so the
// event loop takes it when the main thread is not waiting. At end of input `null` is handed over:
// rpcd is gone.
import { readSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { parentPort, workerData } from "node:worker_threads";

const sync = new Int32Array(workerData.sync);
const port = workerData.port;
const decoder = new StringDecoder("utf8");
const chunk = Buffer.allocUnsafe(1 << 16);
let pending = "";

function hand(line) {
  port.postMessage(line);
  Atomics.store(sync, 0, 1);
  Atomics.notify(sync, 0);
  parentPort.postMessage(0);
}

for (;;) {
  let count;
  try {
    count = readSync(0, chunk, 0, chunk.length, null);
  } catch (error) {
    if (error.code === "EAGAIN") {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); // a non-blocking pipe: try again
      continue;
    }
    if (error.code === "EINTR") continue;
    count = 0;
  }
  if (count === 0) break;
  pending += decoder.write(chunk.subarray(0, count));
  let start = 0;
  let newline = pending.indexOf("\n", start);
  while (newline !== -1) {
    const line = pending.slice(start, newline);
    if (line.trim() !== "") hand(line);
    start = newline + 1;
    newline = pending.indexOf("\n", start);
  }
  pending = pending.slice(start);
}
hand(null);
