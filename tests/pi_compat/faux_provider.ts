// A model for `pi --mode rpc` in tests: pi-ai's faux provider, answering every call with the
// system prompt it was sent (so a test reads what the model got), registered as pifaux/m1.
import { createFauxCore, fauxAssistantMessage } from "@earendil-works/pi-ai";

export default function (pi) {
  const core = createFauxCore({ provider: "pifaux", api: "pifaux-api", models: [{ id: "m1" }] });
  const reply = (context) => fauxAssistantMessage(`SYSTEM PROMPT\n${context.systemPrompt}`);
  core.setResponses(Array.from({ length: 200 }, () => reply));
  pi.registerProvider("pifaux", {
    baseUrl: "http://127.0.0.1:9",
    apiKey: "unused",
    api: "pifaux-api",
    models: [{ id: "m1", name: "m1", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 100000, maxTokens: 1000 }],
    streamSimple: core.streamSimple,
  });
}
