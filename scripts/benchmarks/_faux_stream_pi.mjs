// A Pi extension for `scripts/bench --vs-pi`: pi-ai's own faux provider registered as faux/faux-1,
// answering one prompt with RPCD_BENCH_CHUNKS chunks of RPCD_BENCH_CHUNK (16 characters, so every
// text_delta is one chunk), streamed without delay (tokensPerSecond 0: one microtask per chunk) —
// the same turn rpcd's faux provider streams from its RPCD_FAUX_SCRIPT.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const scope = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works");
const ai = await import(pathToFileURL(join(scope, "pi-ai", "dist", "index.js")).href);

const chunk = process.env.RPCD_BENCH_CHUNK ?? "0123456789abcdef";
const count = Number(process.env.RPCD_BENCH_CHUNKS ?? "1000");
const tokens = Math.max(1, Math.floor(chunk.length / 4));

export default function (pi) {
  const faux = ai.fauxProvider({
    provider: "faux",
    api: "faux",
    tokensPerSecond: 0,
    tokenSize: { min: tokens, max: tokens },
    models: [{ id: "faux-1", name: "Faux Model", reasoning: false, input: ["text"] }],
  });
  faux.setResponses(Array.from({ length: 20 }, () => ai.fauxAssistantMessage(chunk.repeat(count))));
  pi.registerProvider(faux.provider);
}
