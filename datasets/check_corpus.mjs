#!/usr/bin/env node
// check_corpus.mjs: sanity checks for a corpus written by datasets/generate.py.
//
//   node datasets/check_corpus.mjs DIR [ORACLE_OUT.jsonl]
//
// 1. Every line of every undamaged file equals JSON.stringify(JSON.parse(line)), i.e. the file is
//    byte-for-byte what Pi (JavaScript) would write; files end with "\n".
// 2. Entry ids are unique per file and every parentId names an earlier entry (or is null).
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
let files = 0, lines = 0, bad = 0, structural = 0, oracleBad = 0;
const report = (...a) => { if (bad + structural + oracleBad < 20) console.log(...a); };
for (const f of manifest.files) {
	if (f.damage || f.expect !== "ok") continue;
	files++;
	const text = fs.readFileSync(path.join(dir, f.path), "utf8");
	if (!text.endsWith("\n")) { bad++; report("no final newline", f.path); }
	const ls = text.split("\n");
	ls.pop();
	const seen = new Set();
	ls.forEach((l, i) => {
		lines++;
		let v;
		try { v = JSON.parse(l); } catch { bad++; report("unparsable", f.path, i); return; }
		const s = JSON.stringify(v);
		if (s !== l) {
			bad++;
			let k = 0;
			while (s[k] === l[k]) k++;
			report("differs", f.path, i, JSON.stringify(l.slice(Math.max(0, k - 40), k + 40)), "vs", JSON.stringify(s.slice(Math.max(0, k - 40), k + 40)));
		}
		if (i === 0 || v.id === undefined) return;
		if (seen.has(v.id)) { structural++; report("duplicate id", f.path, i); }
		if ("parentId" in v && v.parentId !== null && !seen.has(v.parentId)) { structural++; report("parent not earlier", f.path, i, v.parentId); }
		seen.add(v.id);
	});
}
const out = { files, lines, notJsStringify: bad, structural };
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
