#!/usr/bin/env node
// Pi's own session list (SessionManager.listAll, what /resume shows) for a sessions folder:
// one JSON line per listed session: {path, id, name, created, modified, messageCount}.
// Used by pisa's tests to check `startedAt`, `lastActivityAt` and `name` against Pi.
//
//   node tests/oracle/pi_list.mjs SESSIONS_DIR
//
// Pi's package is found as oracle.mjs finds it (pi.mjs: $PI_PKG, else $PISA_TEST_ENV/node, else
// <repo>/target/test-env/node); exit status 2 when it is missing or no folder is given.
// Pi lists the .jsonl files one folder below SESSIONS_DIR (not deeper), as listAll does.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { importPiModule, requirePiPackage } from "./pi.mjs";

const dir = process.argv[2];
if (!dir) {
	process.stderr.write("usage: node tests/oracle/pi_list.mjs SESSIONS_DIR\n");
	process.exit(2);
}
const pkg = requirePiPackage("pi_list.mjs");

// listAll() reads <agent dir>/sessions; point the agent dir (PI_CODING_AGENT_DIR, read by Pi's
// config.js) at a scratch folder whose `sessions` is a link to DIR. Set before Pi is imported.
const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-list-"));
try {
	fs.symlinkSync(path.resolve(dir), path.join(agentDir, "sessions"));
	process.env.PI_CODING_AGENT_DIR = agentDir;
	const { SessionManager } = await importPiModule(pkg, "core/session-manager.js");
	const sessions = await SessionManager.listAll();
	const iso = (d) => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : null);
	for (const s of sessions) {
		const rel = path.relative(path.join(agentDir, "sessions"), s.path).split(path.sep).join("/");
		const line = {
			path: rel,
			id: s.id,
			name: s.name ?? null,
			created: iso(s.created),
			modified: iso(s.modified),
			messageCount: s.messageCount,
		};
		process.stdout.write(`${JSON.stringify(line)}\n`);
	}
} finally {
	fs.rmSync(agentDir, { recursive: true, force: true });
}
