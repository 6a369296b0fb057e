// rpcd's own test probe (not one of Pi's examples): tells the client, through notify, each lifecycle
// event it sees, so a differential test can compare when Pi and rpcd emit them.
export default function (pi) {
  for (const event of ["session_start", "session_shutdown", "resources_discover", "session_info_changed",
                       "model_select", "thinking_level_select"]) {
    pi.on(event, (e, ctx) => {
      const detail = e.reason ?? e.name ?? e.level ?? (e.model ? `${e.model.provider}/${e.model.id}` : "");
      if (ctx.hasUI) ctx.ui.notify(`${event}:${detail}`, "info");
    });
  }
}
