// rpcd's own test probe (not one of Pi's examples; Pi's tic-tac-toe.ts shows the same option behind a
// terminal game): `step` is an executionMode "sequential" tool, `pstep` the same tool in the default
// parallel mode. Each waits `wait` ms, then records `n`: the entries show the order the calls finished.
const parameters = {
  type: "object",
  properties: { n: { type: "number" }, wait: { type: "number" } },
  required: ["n", "wait"],
};

export default function (pi) {
  const make = (name, executionMode) => ({
    name,
    label: name,
    description: `Record n after wait ms (${executionMode ?? "parallel"})`,
    parameters,
    ...(executionMode ? { executionMode } : {}),
    async execute(_toolCallId, params) {
      await new Promise((resolve) => setTimeout(resolve, params.wait));
      pi.appendEntry("finished", { tool: name, n: params.n });
      return { content: [{ type: "text", text: `${name} ${params.n}` }], details: { n: params.n } };
    },
  });
  pi.registerTool(make("step", "sequential"));
  pi.registerTool(make("pstep", undefined));
}
