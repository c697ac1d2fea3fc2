#!/usr/bin/env node
// Pi's own session list (SessionManager.listAll, what /resume shows) for a sessions folder:
// one JSON line per listed session: {path, id, name, created, modified, messageCount}.
// Used by pisa's tests to check `startedAt`, `lastActivityAt` and `name` against Pi.
//
//   PISA_ORACLE_HOME=... node pi_list.mjs SESSIONS_DIR
//
// Pi lists the .jsonl files one folder below SESSIONS_DIR (not deeper), as listAll does.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) {
	process.stderr.write("usage: node pi_list.mjs SESSIONS_DIR\n");
	process.exit(2);
}
// listAll() reads <agent dir>/sessions; point the agent dir at a folder whose sessions link is DIR.
const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-list-"));
fs.symlinkSync(path.resolve(dir), path.join(agentDir, "sessions"));
process.env.PI_CODING_AGENT_DIR = agentDir;
const home = process.env.PISA_ORACLE_HOME || path.join(os.homedir(), ".cache", "pisa-oracle");
const pkg = process.env.PI_PKG || path.join(home, "node_modules", "@earendil-works", "pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(path.join(pkg, "dist", "core", "session-manager.js")).href);
const sessions = await SessionManager.listAll();
process.on("exit", () => fs.rmSync(agentDir, { recursive: true, force: true }));
const iso = (d) => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : null);
for (const s of sessions) {
	const rel = path.relative(path.join(agentDir, "sessions"), s.path).split(path.sep).join("/");
	process.stdout.write(
		`${JSON.stringify({ path: rel, id: s.id, name: s.name ?? null, created: iso(s.created), modified: iso(s.modified), messageCount: s.messageCount })}\n`,
	);
}
