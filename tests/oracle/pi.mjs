// Locating and loading Pi's npm package, shared by oracle.mjs and pi_list.mjs.
//
// The oracle is only as good as the code it runs, so every script here loads the one pinned
// release (package.json: @earendil-works/pi-coding-agent 1.6.0) from a folder outside the
// repository's sources, chosen by the first rule that applies:
//
//   1. $PI_PKG                      the pi-coding-agent package folder itself;
//   2. $PISA_TEST_ENV/node/node_modules/@earendil-works/pi-coding-agent;
//   3. <repo>/target/test-env/node/node_modules/@earendil-works/pi-coding-agent, <repo> being two
//      folders above this file, which is where `scripts/test` runs `npm ci` with this folder's
//      package.json and package-lock.json.
//
// Nothing is installed from here: a missing package is one line on stderr and exit status 2.
import fs from "node:fs";
import module from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
export const PI_VERSION = "1.6.0";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** The package folder the rules above select, and which rule chose it (for messages). */
export function locatePiPackage(env = process.env) {
	const inNodeModules = (prefix) => path.join(prefix, "node_modules", ...PI_PACKAGE.split("/"));
	if (env.PI_PKG) return { dir: path.resolve(env.PI_PKG), rule: "$PI_PKG" };
	if (env.PISA_TEST_ENV) {
		return { dir: inNodeModules(path.join(path.resolve(env.PISA_TEST_ENV), "node")), rule: "$PISA_TEST_ENV/node" };
	}
	return {
		dir: inNodeModules(path.join(REPO, "target", "test-env", "node")),
		rule: "the default, <repo>/target/test-env/node",
	};
}

/**
 * The located package folder, or exit 2 with one line on stderr. `script` names the caller in
 * that line. A package of another version is refused too: the code copied from Pi
 * (pi-agent-session.mjs) and the expected figures belong to 1.6.0.
 */
export function requirePiPackage(script) {
	const { dir, rule } = locatePiPackage();
	let version;
	try {
		version = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
	} catch {
		version = undefined;
	}
	if (version === undefined || !fs.existsSync(path.join(dir, "dist", "core", "session-manager.js"))) {
		die(
			`${script}: Pi's package (${PI_PACKAGE} ${PI_VERSION}) is missing: looked in ${dir} (${rule}); ` +
				"scripts/test (or scripts/test-env alone) installs it, with npm ci from tests/oracle/package-lock.json",
		);
	}
	if (version !== PI_VERSION) {
		die(
			`${script}: ${dir} holds ${PI_PACKAGE} ${version}, but the oracle is written for ${PI_VERSION}; ` +
				`scripts/test installs ${PI_VERSION}`,
		);
	}
	return dir;
}

/** Import one module of the package by its path under dist/, e.g. "core/session-manager.js". */
export function importPiModule(pkgDir, distPath) {
	return import(pathToFileURL(path.join(pkgDir, "dist", ...distPath.split("/"))).href);
}

/**
 * Make the ids Pi invents for migrated v1 entries predictable. Pi's migration gives each entry
 * `randomUUID().slice(0, 8)` (session-manager.js generateId, imported from "crypto"); this
 * replaces `crypto.randomUUID` with a counter, so the n-th call since the last reset() returns an
 * id whose first 8 hex digits are n. Must run BEFORE session-manager.js is imported, so that its
 * `import { randomUUID } from "crypto"` binding sees the replacement (syncBuiltinESMExports
 * updates the ES-module view of the built-in).
 *
 * The ids never reach the output (v1 ids print as "#<index>"), but they decide whether a raw
 * reference in a v1 file (an id written by hand, say) happens to match a migrated entry, so the
 * sequence is fixed: 00000001, 00000002, ... from each reset().
 */
export async function makePiIdsDeterministic() {
	const crypto = (await import("node:crypto")).default;
	let calls = 0;
	crypto.randomUUID = () => {
		calls += 1;
		return `${calls.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
	};
	module.syncBuiltinESMExports();
	return {
		reset() {
			calls = 0;
		},
	};
}

function die(line) {
	process.stderr.write(`${line}\n`);
	process.exit(2);
}
