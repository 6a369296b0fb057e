// Pi 0.85.0's own parseFrontmatter over stdin: one JSON request per line, one JSON answer per line.
// Request: {"texts": [string, ...]}. Answer: {"results": [{"frontmatter", "body"} | {"error"}, ...]}.
import { createInterface } from "node:readline";
import { join } from "node:path";

const root = process.env.RPCD_PI_ORACLE_DIR;
const dist = join(root, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { parseFrontmatter } = await import(join(dist, "utils", "frontmatter.js"));
const templates = await import(join(dist, "core", "prompt-templates.js"));
const search = await import(join(dist, "modes", "interactive", "components", "session-selector-search.js"));

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
  } else if (request.search) {
    // {"search": {"queries": [q, ...], "texts": [t, ...]}}: parseSearchQuery of each query, and
    // whether matchSession matches a session whose only text is t (id, name and cwd empty).
    const { queries, texts } = request.search;
    results = queries.map((query) => {
      const parsed = search.parseSearchQuery(query);
      return {
        mode: parsed.mode,
        tokens: parsed.tokens.map((t) => [t.kind, t.value]),
        error: parsed.error ?? null,
        matches: texts.map((text) =>
          parsed.error ? false : search.matchSession({ id: "", name: "", allMessagesText: text, cwd: "" }, parsed).matches),
      };
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
