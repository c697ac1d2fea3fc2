/**
 * pisa status in Pi's footer.
 *
 * Shows what the current session cost, its context, today's cost and the active 5-hour
 * window's cost and burn rate, as `pisa status` prints them, and refreshes after each turn,
 * after a compaction and when Pi settles.
 *
 * Install: copy this file to ~/.pi/agent/extensions/ (or .pi/extensions/ in a project),
 * or try it with `pi -e ./pisa-status.ts`. See README.md.
 *
 * Settings (environment):
 *   PISA_BIN            the pisa binary (default: `pisa` on PATH)
 *   PISA_STATUS_FORMAT  the line's template (default below); see `pisa status --help`
 */

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

const KEY = "pisa";
const BIN = process.env.PISA_BIN ?? "pisa";
const FORMAT =
	process.env.PISA_STATUS_FORMAT ?? "{session_cost} session · ctx {context} · {today_cost} today · {block_cost} window ({burn_rate}/h, {block_left} left)";

export default function (pi: ExtensionAPI) {
	// One run at a time: a refresh asked for while one runs is done once it ends.
	let running = false;
	let again = false;

	async function refresh(ctx: ExtensionContext) {
		if (!ctx.hasUI) return;
		if (running) {
			again = true;
			return;
		}
		running = true;
		try {
			const args = ["status", "--format", FORMAT];
			const file = ctx.sessionManager.getSessionFile();
			// The session Pi is writing, not merely the file written last (another Pi may be running).
			if (file) args.push("--session", file);
			const result = await pi.exec(BIN, args, { timeout: 5000 });
			const line = result.stdout.trim();
			const theme = ctx.ui.theme;
			if (result.code === 0 && line) {
				ctx.ui.setStatus(KEY, theme.fg("dim", line));
			} else {
				const why = result.stderr.trim().split("\n")[0]?.replace(/^pisa: /, "") || `exit ${result.code}`;
				ctx.ui.setStatus(KEY, theme.fg("warning", `pisa: ${why}`));
			}
		} catch (e) {
			ctx.ui.setStatus(KEY, ctx.ui.theme.fg("warning", `pisa: ${String(e)}`));
		} finally {
			running = false;
			if (again) {
				again = false;
				void refresh(ctx);
			}
		}
	}

	pi.on("session_start", async (_event, ctx) => {
		void refresh(ctx);
	});
	pi.on("turn_end", async (_event, ctx) => {
		void refresh(ctx);
	});
	pi.on("session_compact", async (_event, ctx) => {
		void refresh(ctx);
	});
	pi.on("agent_settled", async (_event, ctx) => {
		void refresh(ctx);
	});
	pi.on("session_shutdown", async (_event, ctx) => {
		if (ctx.hasUI) ctx.ui.setStatus(KEY, undefined);
	});
}
