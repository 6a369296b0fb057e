// Pi 0.85.0's own parseFrontmatter over stdin: one JSON request per line, one JSON answer per line.
// Request: {"texts": [string, ...]}. Answer: {"results": [{"frontmatter", "body"} | {"error"}, ...]}.
import { createInterface } from "node:readline";
import { join } from "node:path";

const root = process.env.RPCD_PI_ORACLE_DIR;
const dist = join(root, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { parseFrontmatter } = await import(join(dist, "utils", "frontmatter.js"));
const templates = await import(join(dist, "core", "prompt-templates.js"));

function jsonable(value) {
  // NaN/Infinity have no JSON form: tag them so the comparison can still see them.
  return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "number" && !Number.isFinite(v) ? { $number: String(v) } : v)));
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  const request = JSON.parse(line);
  let results;
  if (request.texts) {
    results = request.texts.map((text) => {
      try {
        const { frontmatter, body } = parseFrontmatter(text);
        return { frontmatter: jsonable(frontmatter), body };
      } catch (error) {
        return { error: String(error?.message ?? error) };
      }
    });
  } else if (request.expand) {
    // {"expand": {"templates": [{name, content}], "inputs": [text, ...]}}
    const list = request.expand.templates;
    // args: what parseCommandArgs makes of the text after "/name" (the regex expandPromptTemplate uses)
    results = request.expand.inputs.map((text) => {
      const match = text.match(/^\/([^\s]+)(?:\s+([\s\S]*))?$/);
      return {
        name: match ? match[1] : null,
        args: match ? templates.parseCommandArgs(match[2] ?? "") : null,
        expanded: templates.expandPromptTemplate(text, list),
      };
    });
  }
  process.stdout.write(JSON.stringify({ results }) + "\n");
}
