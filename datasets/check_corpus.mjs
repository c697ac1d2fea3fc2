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
// Exit status 1 on any failure.
import fs from "node:fs";
import path from "node:path";

const dir = process.argv[2];
if (!dir) {
	console.error("usage: node check_corpus.mjs DIR [ORACLE_OUT.jsonl]");
	process.exit(2);
}
const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
let files = 0, lines = 0, skipped = 0, bad = 0, structural = 0, oracleBad = 0;
const report = (...a) => { if (bad + structural + oracleBad < 20) console.log(...a); };
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
const out = { files, lines, damagedLinesSkipped: skipped, notJsStringify: bad, structural };
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
process.exit(bad + structural + oracleBad ? 1 : 0);
