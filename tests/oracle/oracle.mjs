#!/usr/bin/env node
// pisa's test oracle: runs Pi's own code (@earendil-works/pi-coding-agent 1.6.0, the owner of
// the session format) over session files and prints, per file, the figures pisa must reproduce.
//
//   node tests/oracle/oracle.mjs DIR [DIR|FILE ...] > out.ndjson
//
// One JSON line per *.jsonl file, sorted by path; a summary line on stderr. Exit status 2 for no
// argument, an argument that does not exist, or no Pi package (see pi.mjs for where it looks;
// scripts/test installs it). Output keys and their meaning: README.md in this folder.
//
// Modules: pi.mjs finds and loads Pi; pi-agent-session.mjs holds the two pieces of Pi's
// AgentSession copied because Node 20 cannot import them; record.mjs builds a file's record;
// corpus.mjs lists the files.
import { listSessionFiles, indexByBaseName } from "./corpus.mjs";
import { importPiModule, makePiIdsDeterministic, requirePiPackage } from "./pi.mjs";
import { createRecorder } from "./record.mjs";

const USAGE = "usage: node tests/oracle/oracle.mjs DIR [DIR|FILE ...] > out.ndjson";

const args = process.argv.slice(2);
if (args.length === 0 || args.includes("-h") || args.includes("--help")) {
	process.stderr.write(`${USAGE}\n`);
	process.exit(args.length === 0 ? 2 : 0);
}

const pkg = requirePiPackage("oracle.mjs");
// Before session-manager.js is imported: its `randomUUID` binding must see the counter.
const ids = await makePiIdsDeterministic();
const [sessionManager, usageTotals, compaction] = await Promise.all([
	importPiModule(pkg, "core/session-manager.js"),
	importPiModule(pkg, "core/usage-totals.js"),
	importPiModule(pkg, "core/compaction/compaction.js"),
]);
const pi = {
	loadEntriesFromFile: sessionManager.loadEntriesFromFile,
	SessionManager: sessionManager.SessionManager,
	buildContextEntries: sessionManager.buildContextEntries,
	buildSessionProjection: sessionManager.buildSessionProjection,
	getLatestCompactionEntry: sessionManager.getLatestCompactionEntry,
	createUsageTotals: usageTotals.createUsageTotals,
	addUsageToTotals: usageTotals.addUsageToTotals,
	getUsageCostBreakdown: usageTotals.getUsageCostBreakdown,
	estimateProjectedContextTokens: compaction.estimateProjectedContextTokens,
	calculateContextTokens: compaction.calculateContextTokens,
};

let files;
try {
	files = listSessionFiles(args);
} catch (err) {
	process.stderr.write(`oracle.mjs: ${err.message}\n`);
	process.exit(2);
}

const parents = indexByBaseName(files);
const recorder = createRecorder(pi, ids);
const started = Date.now();
const seen = { ok: 0, rejected: 0, error: 0 };
let bytes = 0;
try {
	for (const [i, f] of files.entries()) {
		const rec = recorder.record(f.abs, f.rel, parents);
		seen[rec.status] += 1;
		bytes += rec.bytes ?? 0;
		await printLine(JSON.stringify(rec));
		if ((i + 1) % 500 === 0) process.stderr.write(`oracle.mjs: ${i + 1}/${files.length} files\n`);
	}
} finally {
	recorder.close();
}
process.stderr.write(
	`oracle.mjs: ${files.length} files (${seen.ok} ok, ${seen.rejected} rejected, ${seen.error} error), ` +
		`${(bytes / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);

/** One line to stdout, waiting when the pipe is full (a large corpus must not pile up in memory). */
function printLine(line) {
	if (process.stdout.write(`${line}\n`)) return Promise.resolve();
	return new Promise((resolve) => process.stdout.once("drain", resolve));
}
