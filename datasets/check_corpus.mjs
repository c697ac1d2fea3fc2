#!/usr/bin/env node
// check_corpus.mjs: sanity checks for a corpus written by datasets/generate.py.
//
//   node datasets/check_corpus.mjs DIR [ORACLE_OUT.jsonl]
//
// 1. Every line of every file equals JSON.stringify(JSON.parse(line)), i.e. the file is
//    byte-for-byte what Pi (JavaScript) would write, and files end with "\n". Damaged files are
//    checked too, except for their damage: the lines the manifest lists in `damagedLines` are
//    skipped, `crlf` files have "\r" before every "\n", a `bom` file starts with U+FEFF, and
//    `truncated_tail`, `no_final_newline` and `empty` files do not end with "\n".
// 2. Entry ids are unique per file and every parentId names an earlier entry (or is null),
//    again except on the damaged lines (a `duplicate_ids` file repeats an id there on purpose).
// 3. With ORACLE_OUT (from `node oracle.mjs DIR`): no "error" records, every status equals the
//    manifest's `expect`, and every manifest file was seen.
// 4. The pi-subagents layouts (manifest `subagentTruth`): every transcript artifact is a version-1
//    record file that starts with the redacted prompt; for every `subagent` call, the tool result's
//    `details.results[i]` name the child's session and transcript files, which exist exactly when
//    the manifest says they were written; `results[i].usage` (>= 0.59 style) equals the sum of the
//    child's own assistant messages (after a fork's copied prefix), and the tool result's `usage` and
//    `totalChildUsage` the sum of the results (costs equal as doubles, summed in JavaScript's order);
//    old-style results have no usage; the child's own entries fall inside the parent's tool call; a
//    fork child names the parent in `parentSession` and copies its entries unchanged; a transcript
//    holds the child's assistant messages verbatim.
// Exit status 1 on any failure.
import fs from "node:fs";
import path from "node:path";

const dir = process.argv[2];
if (!dir) {
	console.error("usage: node check_corpus.mjs DIR [ORACLE_OUT.jsonl]");
	process.exit(2);
}
const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
let files = 0, lines = 0, skipped = 0, bad = 0, structural = 0, oracleBad = 0, subagentBad = 0;
const report = (...a) => { if (bad + structural + oracleBad + subagentBad < 20) console.log(...a); };
const unterminated = new Set(["truncated_tail", "no_final_newline", "empty"]);
for (const f of manifest.files) {
	files++;
	const damaged = new Set(f.damagedLines ?? []);
	const text = fs.readFileSync(path.join(dir, f.path), "utf8");
	const ends = text.endsWith("\n");
	if (ends === unterminated.has(f.damage) && text !== "") { bad++; report(ends ? "final newline" : "no final newline", f.path); }
	const ls = text.split("\n");
	if (ends || text === "") ls.pop();
	const seen = new Set();
	ls.forEach((l, i) => {
		if (damaged.has(i)) {
			// not checked, but its id counts as seen for the parents of later lines
			skipped++;
			try { const v = JSON.parse(l); if (v && typeof v === "object" && v.id !== undefined) seen.add(v.id); } catch {}
			return;
		}
		lines++;
		if (f.damage === "crlf") {
			if (!l.endsWith("\r")) { bad++; report("no \\r", f.path, i); }
			l = l.slice(0, -1);
		}
		if (f.damage === "bom" && i === 0) {
			if (!l.startsWith("\ufeff")) { bad++; report("no BOM", f.path); }
			l = l.slice(1);
		}
		let v;
		try { v = JSON.parse(l); } catch { bad++; report("unparsable", f.path, i); return; }
		const s = JSON.stringify(v);
		if (s !== l) {
			bad++;
			let k = 0;
			while (s[k] === l[k]) k++;
			report("differs", f.path, i, JSON.stringify(l.slice(Math.max(0, k - 40), k + 40)), "vs", JSON.stringify(s.slice(Math.max(0, k - 40), k + 40)));
		}
		if (v === null || typeof v !== "object" || v.type === "session" || v.id === undefined) return;
		if (seen.has(v.id)) { structural++; report("duplicate id", f.path, i); }
		if ("parentId" in v && v.parentId !== null && !seen.has(v.parentId)) { structural++; report("parent not earlier", f.path, i, v.parentId); }
		seen.add(v.id);
	});
}
// 4. pi-subagents layouts
let subagentRuns = 0;
const subFail = (...a) => { subagentBad++; report("subagent:", ...a); };
{
	const root = manifest.sessionsRoot + "/";
	const rows = new Map(manifest.files.map((f) => [f.path, f]));
	const entriesOf = (rel) => fs.readFileSync(path.join(dir, rel), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	const exists = (rel) => rows.has(rel) && fs.existsSync(path.join(dir, rel));
	const sumAnswers = (msgs) => {
		const u = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, turns: 0 };
		for (const m of msgs) {
			u.input += m.usage.input; u.output += m.usage.output; u.cacheRead += m.usage.cacheRead;
			u.cacheWrite += m.usage.cacheWrite; u.cost += m.usage.cost.total; u.turns += 1;
		}
		return u;
	};
	const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
	const transcripts = manifest.subagentTruth?.transcripts ?? {};
	for (const f of manifest.files) {
		if (f.kind !== "artifact") continue;
		const recs = entriesOf(f.path);
		const first = recs[0] ?? {};
		if (first.version !== 1 || first.recordType !== "message" || first.sourceEventType !== "initial_prompt" || "type" in first) subFail("transcript start", f.path);
		if (recs.some((r) => "type" in r || r.runId !== first.runId || r.childIndex !== first.childIndex)) subFail("transcript records", f.path);
		if (!transcripts[f.path]) subFail("transcript not in subagentTruth", f.path);
	}
	for (const [prel, p] of Object.entries(manifest.subagentTruth?.parents ?? {})) {
		const entries = entriesOf(prel);
		for (const run of p.runs) {
			subagentRuns++;
			const tr = entries.find((e) => e.type === "message" && e.message?.role === "toolResult" && e.message.details?.runId === run.runId);
			if (!tr) { subFail("no tool result", prel, run.runId); continue; }
			const call = entries.find((e) => e.type === "message" && e.message?.role === "assistant" &&
				e.message.content.some((b) => b.type === "toolCall" && b.name === "subagent" && b.id === tr.message.toolCallId));
			if (!call) { subFail("no call", prel, run.runId); continue; }
			const lo = Date.parse(call.timestamp), hi = tr.message.timestamp;
			const d = tr.message.details;
			if (d.mode !== run.mode || d.results.length !== run.children.length) subFail("details", prel, run.runId);
			const tot = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, turns: 0 };
			for (const ch of run.children) {
				const r = d.results[ch.index];
				if (!r || r.sessionFile !== root + ch.sessionFile || r.transcriptPath !== root + ch.transcript) { subFail("result paths", prel, run.runId, ch.index); continue; }
				if (exists(ch.sessionFile) !== ch.sessionWritten || fs.existsSync(path.join(dir, ch.sessionFile)) !== ch.sessionWritten) subFail("child file", ch.sessionFile);
				if (exists(ch.transcript) !== ch.transcriptWritten || fs.existsSync(path.join(dir, ch.transcript)) !== ch.transcriptWritten) subFail("transcript file", ch.transcript);
				if ((r.usage !== undefined) !== (run.style === "usage")) subFail("result usage style", prel, run.runId, ch.index);
				if (r.usage && !same(r.usage, ch.answers)) subFail("result usage", prel, run.runId, ch.index, JSON.stringify(r.usage), JSON.stringify(ch.answers));
				for (const k of Object.keys(tot)) tot[k] += ch.answers[k];
				let answers = null;
				if (ch.sessionWritten) {
					const child = entriesOf(ch.sessionFile);
					const copied = rows.get(ch.sessionFile).features.copied_entries ?? 0;
					const own = child.slice(1 + copied);
					answers = own.filter((e) => e.type === "message" && e.message.role === "assistant").map((e) => e.message);
					if (!same(sumAnswers(answers), ch.answers)) subFail("child answers", ch.sessionFile, JSON.stringify(sumAnswers(answers)), JSON.stringify(ch.answers));
					for (const e of own) {
						const t = Date.parse(e.timestamp);
						const mt = e.type === "message" ? e.message.timestamp : t;
						if (e.type !== "label" && !(t > lo && t < hi && mt > lo && mt < hi)) { subFail("child entry outside the tool call", ch.sessionFile, e.id); break; }
					}
					if (ch.kind === "fork") {
						if (child[0].parentSession !== root + prel) subFail("fork parentSession", ch.sessionFile);
						const byId = new Map(entries.filter((e) => e.id).map((e) => [e.id, e]));
						for (const e of child.slice(1, 1 + copied)) {
							const o = byId.get(e.id);
							if (e.type === "label" && !o) continue; // re-created labels have new ids
							if (!o || o.timestamp !== e.timestamp || !same(o.message, e.message) || !same(o.usage, e.usage)) { subFail("fork copy", ch.sessionFile, e.id); break; }
						}
					} else if ("parentSession" in child[0]) subFail("fresh child with parentSession", ch.sessionFile);
				}
				if (ch.transcriptWritten) {
					const recs = entriesOf(ch.transcript);
					const said = recs.filter((r) => r.recordType === "message" && r.role === "assistant").map((r) => r.message);
					if (said.length !== ch.answers.turns) subFail("transcript answers", ch.transcript, said.length, ch.answers.turns);
					if (answers && !same(said, answers)) subFail("transcript differs from the child", ch.transcript);
				}
			}
			if (run.style === "usage") {
				const u = tr.message.usage;
				const want = { input: tot.input, output: tot.output, cacheRead: tot.cacheRead, cacheWrite: tot.cacheWrite,
					totalTokens: tot.input + tot.output + tot.cacheRead + tot.cacheWrite,
					cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: tot.cost } };
				if (!same(u, want)) subFail("tool result usage", prel, run.runId, JSON.stringify(u), JSON.stringify(want));
				if (!same(d.totalChildUsage, tot)) subFail("totalChildUsage", prel, run.runId);
			} else if (tr.message.usage !== undefined || d.totalChildUsage !== undefined) subFail("old style with usage", prel, run.runId);
		}
	}
}
const out = { files, lines, damagedLinesSkipped: skipped, notJsStringify: bad, structural, subagentRuns, subagentProblems: subagentBad };
if (process.argv[3]) {
	const expect = new Map(manifest.files.map((f) => [f.path, f.expect]));
	const statuses = {};
	let seenCount = 0;
	for (const l of fs.readFileSync(process.argv[3], "utf8").split("\n")) {
		if (!l) continue;
		const r = JSON.parse(l);
		statuses[r.status] = (statuses[r.status] ?? 0) + 1;
		if (!expect.has(r.path)) { oracleBad++; report("not in manifest", r.path); continue; }
		seenCount++;
		if (r.status !== expect.get(r.path)) { oracleBad++; report("status", r.path, r.status, "expected", expect.get(r.path), r.error ?? r.rejectReason ?? ""); }
	}
	if (seenCount !== expect.size) { oracleBad++; report("oracle saw", seenCount, "of", expect.size, "files"); }
	Object.assign(out, { oracleStatuses: statuses, oracleMismatches: oracleBad });
}
console.log(JSON.stringify(out));
process.exit(bad + structural + oracleBad + subagentBad ? 1 : 0);
