// (harness) Which files the oracle reports, under which names, in which order.
import fs from "node:fs";
import path from "node:path";

/**
 * The session files named by the command-line arguments: every `*.jsonl` regular file under a
 * directory (walked recursively, without following symbolic links inside it; unreadable folders
 * are skipped), or a file given by name (whatever its extension). A file under a directory is
 * named by its path relative to that directory, "/"-separated; a file argument by its base name.
 *
 * Sorted by name in JavaScript string order (UTF-16 code units), so the output does not depend on
 * the order the file system lists folders in; equal names keep the order of the arguments.
 * Throws for an argument that does not exist.
 */
export function listSessionFiles(args) {
	const files = [];
	for (const arg of args) {
		if (fs.statSync(arg).isDirectory()) {
			for (const abs of jsonlFilesUnder(arg)) {
				files.push({ abs, rel: path.relative(arg, abs).split(path.sep).join("/") });
			}
		} else {
			files.push({ abs: arg, rel: path.basename(arg) });
		}
	}
	return files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

function jsonlFilesUnder(dir) {
	const found = [];
	const pending = [dir];
	while (pending.length > 0) {
		const folder = pending.pop();
		let dirents;
		try {
			dirents = fs.readdirSync(folder, { withFileTypes: true });
		} catch {
			continue;
		}
		for (const d of dirents) {
			const full = path.join(folder, d.name);
			if (d.isDirectory()) pending.push(full);
			else if (d.isFile() && d.name.endsWith(".jsonl")) found.push(full);
		}
	}
	return found;
}

/**
 * For parentInCorpus: base name -> name of a listed file with that base name (the last one in
 * the sorted order when several share it). Rejected files count too: the index is about names.
 */
export function indexByBaseName(files) {
	const index = new Map();
	for (const f of files) index.set(path.basename(f.abs), f.rel);
	return index;
}
