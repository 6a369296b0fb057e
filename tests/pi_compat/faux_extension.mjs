// A Pi extension that registers pi-ai's faux provider as "faux/faux-1", scripted with rpcd's faux
// script format (tests/pi_compat/pi_program.py): the same file drives real `pi --mode rpc` and rpcd.
//
// Environment: RPCD_PI_ORACLE_DIR (Pi's install), RPCD_FAUX_SCRIPT (a JSON list of steps:
// {"text"}, {"thinking"}, {"toolCall": {name, arguments, id}}, {"toolCalls": [...]},
// {"stopReason", "errorMessage"}). An exhausted script answers "echo: <last user text>", as rpcd's
// faux provider does. RPCD_FAUX_MODEL (JSON, optional) overrides the model definition.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const scope = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works");
const ai = await import(pathToFileURL(join(scope, "pi-ai", "dist", "index.js")).href);

const steps = JSON.parse(readFileSync(process.env.RPCD_FAUX_SCRIPT, "utf8"));
const model = process.env.RPCD_FAUX_MODEL
  ? JSON.parse(process.env.RPCD_FAUX_MODEL)
  : { id: "faux-1", name: "Faux Model", reasoning: false, input: ["text", "image"] };

function userText(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

function blocks(step) {
  const out = [];
  if (step.thinking !== undefined) out.push(ai.fauxThinking(step.thinking));
  if (step.text !== undefined) out.push(ai.fauxText(step.text.repeat(step.repeat ?? 1)));
  const calls = [...(step.toolCall ? [step.toolCall] : []), ...(step.toolCalls ?? [])];
  for (const call of calls) out.push(ai.fauxToolCall(call.name, call.arguments ?? {}, { id: call.id }));
  return { content: out, hasCalls: calls.length > 0 };
}

function toMessage(step) {
  const { content, hasCalls } = blocks(step);
  const stopReason = step.stopReason ?? (hasCalls ? "toolUse" : "stop");
  const options = { stopReason };
  if (step.errorMessage !== undefined || stopReason === "error") {
    options.errorMessage = step.errorMessage ?? "faux provider error";
  }
  return ai.fauxAssistantMessage(content, options);
}

// One scripted provider per process: Pi loads extensions again for every session a replacement
// makes (new_session, switch_session, fork, clone), and the script goes on where it was, as rpcd's
// faux provider's queue does across replacements.
let faux;

export default function (pi) {
  if (faux === undefined) {
    faux = ai.fauxProvider({ provider: "faux", api: "faux", tokensPerSecond: 2000, models: [model] });
    const echo = (context) => {
      const last = [...context.messages].reverse().find((m) => m.role === "user");
      const text = last ? userText(last) : "";
      return ai.fauxAssistantMessage(text ? `echo: ${text}` : "echo:");
    };
    faux.setResponses([...steps.map(toMessage), ...Array.from({ length: 50 }, () => echo)]);
  }
  pi.registerProvider(faux.provider);
}
