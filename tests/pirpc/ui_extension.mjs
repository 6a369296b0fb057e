// The extension UI round trip of tests/pirpc/test_against_pi.py, for real Pi (ui_extension.py is
// the same extension for rpcd): `/ask` opens every dialog and sends every fire-and-forget request.
export default function (pi) {
  pi.registerCommand("ask", {
    description: "every extension UI request",
    handler: async (args, ctx) => {
      const choice = await ctx.ui.select("Pick one", ["alpha", "beta"]);
      const sure = await ctx.ui.confirm("Sure?", `about ${args}`);
      const name = await ctx.ui.input("Your name", "type it");
      const text = await ctx.ui.editor("Edit this", "line 1\nline 2");
      const late = await ctx.ui.select("Too late", ["x", "y"], { timeout: 300 });
      const never = await ctx.ui.confirm("Timed confirm", "nobody answers", { timeout: 300 });
      ctx.ui.notify(`results ${JSON.stringify([choice ?? null, sure, name ?? null, text ?? null, late ?? null, never])}`,
        "info");
      ctx.ui.notify("careful", "warning");
      ctx.ui.setStatus("ask", "asking");
      ctx.ui.setStatus("ask", undefined);
      ctx.ui.setWidget("ask", ["one", "two"], { placement: "belowEditor" });
      ctx.ui.setWidget("ask", undefined, { placement: "aboveEditor" });
      ctx.ui.setTitle("asked");
      ctx.ui.setEditorText("prefilled");
    },
  });
  pi.registerCommand("boom", {
    description: "a command that fails",
    handler: async () => {
      throw new Error("boom went the command");
    },
  });
}
