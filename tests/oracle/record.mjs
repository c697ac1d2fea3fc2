// One output record per session file: what Pi loads, migrates, counts, projects and estimates.
//
// Every figure about the session comes from Pi's code (imported from the package, or the two
// AgentSession pieces in pi-agent-session.mjs); this module only feeds files to it and tallies
// what it returns. The parts that are the harness's own, not Pi's, are marked "(harness)".
//
// Keys are assigned in output order, and each is computed right where it is assigned. That
// order also decides which error a file reports when Pi's code would throw in several places:
// the first one reached, walking the keys in order.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { getContextUsageTokens, getSessionStats } from "./pi-agent-session.mjs";

/**
 * @param pi   Pi's functions: loadEntriesFromFile, SessionManager, buildContextEntries,
 *             buildSessionProjection, getLatestCompactionEntry, createUsageTotals,
 *             addUsageToTotals, getUsageCostBreakdown, estimateProjectedContextTokens,
 *             calculateContextTokens.
 * @param ids  the deterministic id counter (pi.mjs makePiIdsDeterministic), reset per file.
 * @returns {{record(absPath, relPath, parentIndex): object, close(): void}}
 */
export function createRecorder(pi, ids) {
	const scratch = new ScratchCopies();

	function record(absPath, relPath, parentIndex) {
		try {
			return sessionRecord(pi, ids, scratch, absPath, relPath, parentIndex);
		} catch (err) {
			// Pi's code threw on this file (or it could not be read): name the place, not the figures.
			return { path: relPath, status: "error", error: firstStackLines(err) };
		}
	}
	return { record, close: () => scratch.close() };
}

function sessionRecord(pi, ids, scratch, absPath, relPath, parentIndex) {
	// Pi's functions are called bare, never as methods of `pi`, so that a stack frame in an error
	// record names them as Pi's own callers would ("at estimateTokens", not "at Object.…").
	const { getUsageCostBreakdown, estimateProjectedContextTokens } = pi;
	const bytes = fs.readFileSync(absPath);
	const lines = scanLines(bytes);
	ids.reset();
	const { entries, piAppendsNewline } = loadLikePi(pi, scratch, absPath, bytes);
	const rec = { path: relPath, status: "ok", bytes: bytes.length, lines: lines.lines };

	if (entries.length === 0) {
		rec.status = "rejected";
		rec.rejectReason = rejectReason(bytes);
		rec.raw = { blankLines: lines.blank, endsWithNewline: lines.endsWithNewline };
		return rec;
	}

	// The version decides Pi's migration path; read it before Pi rewrites the header in memory.
	const header = entries[0];
	const loadedVersion = header.version ?? 1;
	// Pi's own loader path for an existing file: _loadEntries -> migrateToCurrentVersion (v1 -> v2
	// -> v3, mutating `entries`) -> _buildIndex. In memory, so the migration never writes back.
	const sm = pi.SessionManager.inMemory("/", undefined, entries);
	const all = sm.getEntries();
	const ref = entryNames(all, loadedVersion < 2);

	rec.sessionId = typeof header.id === "string" ? header.id : null;
	rec.version = header.version ?? null; // after migration: 3 for a v1 or v2 file
	rec.migratedFrom = loadedVersion < 3 ? loadedVersion : null;
	rec.cwd = typeof header.cwd === "string" ? header.cwd : null;
	rec.parentSession = header.parentSession ?? null;
	// (harness) a listed file named like the parent session's file
	rec.parentInCorpus = rec.parentSession ? (parentIndex.get(lastPathSegment(rec.parentSession)) ?? null) : null;
	rec.headerTimestamp = header.timestamp ?? null;
	rec.name = sm.getSessionName() ?? null;
	rec.entryCount = all.length;
	rec.entryCounts = tally(all, entryKind);
	rec.extraHeaderLines = entries.filter((e, i) => i > 0 && e.type === "session").length;
	rec.raw = {
		// (harness) line diagnostics; `entries` still holds every parsed line, header included
		parsedLines: entries.length,
		blankLines: lines.blank,
		unparsableLines: lines.lines - lines.blank - entries.length,
		endsWithNewline: lines.endsWithNewline,
		piAppendsNewline,
	};
	rec.messageCounts = tally(
		all.filter((e) => e.type === "message"),
		(e) => String(e.message?.role),
	);

	// ---- usage: Pi's totals, Pi's breakdown, then the harness's splits of the same usages ----
	rec.stats = getSessionStats(sm, pi);
	rec.usageBreakdown = getUsageCostBreakdown(all);
	Object.assign(rec, usageSplits(pi, all));

	// ---- the tree: leaf = last entry in file order, branch = root .. leaf ----
	// The three guards stop where Pi's own walks would never return (see NeverReturns).
	const leaf = sm.getLeafEntry();
	if (!walkEnds(sm.byId, leaf)) throw new NeverReturns("getBranch()", "a parent cycle above the leaf");
	const branch = sm.getBranch();
	const onBranch = new Set(branch);
	rec.leafId = ref.id(leaf);
	rec.leafIndex = leaf ? (ref.indexOf(leaf) ?? null) : null;
	rec.leafType = leaf ? entryKind(leaf) : null;
	rec.activePathLength = branch.length;
	rec.offPathEntries = all.length - branch.length;
	if (treeHasCycle(all)) throw new NeverReturns("getTree()", "a cycle of parent links reachable from a root");
	rec.treeRoots = sm.getTree().length;

	// ---- what the model would see now ----
	// buildSessionPath starts at the leaf, or at the last entry when the leaf has no id.
	if (!walkEnds(sm.byId, leaf ?? all.at(-1))) {
		throw new NeverReturns("buildContextEntries()", "a parent cycle above the last entry");
	}
	const contextEntries = sm.buildContextEntries();
	const projection = sm.buildSessionProjection();
	rec.contextEntryCount = contextEntries.length;
	rec.contextEntryTypes = tally(contextEntries, entryKind);
	rec.projectedMessageCount = projection.messages.length;
	rec.projectedRoles = tally(projection.messages, (m) => String(m?.role));
	rec.model = projection.model
		? { provider: projection.model.provider ?? null, modelId: projection.model.modelId ?? null }
		: null;
	rec.thinkingLevel = projection.thinkingLevel ?? null;
	rec.contextEdits = contextEditCounts(all, onBranch, contextEntries);
	rec.compactions = compactionSummary(pi, all, branch, ref);

	const estimate = estimateProjectedContextTokens(projection, branch);
	rec.estimate = {
		tokens: estimate.tokens,
		usageTokens: estimate.usageTokens,
		trailingTokens: estimate.trailingTokens,
		lastUsageIndex: estimate.lastUsageIndex,
	};
	rec.contextUsageTokens = getContextUsageTokens(sm, pi);
	rec.compactionEffects = compactionEffects(pi, sm, all, onBranch, ref);
	return rec;
}

// ---------------------------------------------------------------------------------------------
// Loading

/**
 * Pi's loadEntriesFromFile, without its one side effect on the corpus: when the last line has no
 * "\n" (and the file has a valid header), Pi appends "\n" to the file it read. Such files are
 * loaded from a scratch copy instead, and whether the copy grew is reported as piAppendsNewline.
 * The path is made absolute so that Pi's normalizePath (which expands "~/" and "file://") takes
 * it literally.
 */
function loadLikePi(pi, scratch, absPath, bytes) {
	const { loadEntriesFromFile } = pi;
	if (bytes.length === 0 || bytes[bytes.length - 1] === 0x0a) {
		return { entries: loadEntriesFromFile(path.resolve(absPath)), piAppendsNewline: false };
	}
	const copy = scratch.write(bytes);
	try {
		const entries = loadEntriesFromFile(copy);
		return { entries, piAppendsNewline: fs.statSync(copy).size !== bytes.length };
	} finally {
		scratch.remove(copy);
	}
}

/** Scratch copies in one private temporary folder, removed when the run ends. */
class ScratchCopies {
	#dir = null;
	#count = 0;
	write(bytes) {
		this.#dir ??= fs.mkdtempSync(path.join(os.tmpdir(), "pisa-oracle-"));
		const file = path.join(this.#dir, `${this.#count++}.jsonl`);
		fs.writeFileSync(file, bytes);
		return file;
	}
	remove(file) {
		fs.rmSync(file, { force: true });
	}
	close() {
		if (this.#dir) fs.rmSync(this.#dir, { recursive: true, force: true });
		this.#dir = null;
	}
}

// ---------------------------------------------------------------------------------------------
// (harness) Line diagnostics and reject reasons: byte-level facts about the file, not Pi's view.

/**
 * Physical lines split on "\n" (a last line without "\n" counts; a final "\n" opens no new line),
 * how many hold only spaces, tabs and "\r" (a narrower rule than Pi's String#trim, which also
 * drops a BOM or a no-break space: such lines count as unparsable here), and the final byte.
 */
function scanLines(bytes) {
	let lines = 0;
	let blank = 0;
	for (let start = 0; start < bytes.length; ) {
		const newline = bytes.indexOf(0x0a, start);
		const end = newline === -1 ? bytes.length : newline;
		lines += 1;
		let i = start;
		while (i < end && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0d)) i += 1;
		if (i === end) blank += 1;
		start = end + 1;
	}
	return { lines, blank, endsWithNewline: bytes.length > 0 && bytes[bytes.length - 1] === 0x0a };
}

/**
 * Why loadEntriesFromFile returned nothing, replaying its line rules: lines split on "\n", blank
 * ones (String#trim) and unparsable ones skipped, falsy JSON values (null, 0, false, "") dropped;
 * the first value left was not a `session` header with a string id, or there was none.
 */
function rejectReason(bytes) {
	if (bytes.length === 0) return "empty_file";
	for (const line of bytes.toString("utf8").split("\n")) {
		if (!line.trim()) continue;
		let value;
		try {
			value = JSON.parse(line);
		} catch {
			continue;
		}
		if (value) return "first_entry_not_session_header";
	}
	return "no_parsable_entries";
}

// ---------------------------------------------------------------------------------------------
// (harness) Naming entries in the output

/**
 * How entries and id references are printed. Ids of a migrated v1 file are Pi's random ones, so
 * they print as "#<index in getEntries()>", and a reference that names no entry as "#?"; other
 * files print ids as written. A reference resolves like Pi's index: the last entry with that id.
 */
function entryNames(all, migratedFromV1) {
	const index = new Map(all.map((e, i) => [e, i]));
	const byId = new Map();
	for (const e of all) if (typeof e === "object") byId.set(e.id, e);
	return {
		indexOf: (entry) => index.get(entry),
		id(entry) {
			if (!entry) return null;
			return migratedFromV1 ? `#${index.get(entry)}` : (entry.id ?? null);
		},
		reference(id) {
			if (id === undefined || id === null) return null;
			if (!migratedFromV1) return id;
			const target = byId.get(id);
			return target ? `#${index.get(target)}` : "#?";
		},
	};
}

/** The type an entry is counted under: its `type` string, else a bracketed description. */
function entryKind(entry) {
	if (Array.isArray(entry)) return "(array)";
	if (entry === null || typeof entry !== "object") return `(${typeof entry})`;
	return typeof entry.type === "string" ? entry.type : "(no type)";
}

/** {key: count} with keys in sorted order (a Map, so any key, even "__proto__", counts). */
function tally(items, keyOf) {
	const counts = new Map();
	for (const item of items) {
		const key = keyOf(item);
		counts.set(key, (counts.get(key) ?? 0) + 1);
	}
	return sortedObject(counts);
}

/** A plain object from a Map's entries, keys sorted by UTF-16 code units. */
function sortedObject(map) {
	return Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function lastPathSegment(p) {
	return String(p).split(/[\\/]/).pop();
}

// ---------------------------------------------------------------------------------------------
// (harness) Usage split by `usage` entry kind and by source. Each usage is added with Pi's
// createUsageTotals/addUsageToTotals, in file order, so sums match Pi's to the last bit (and
// throw exactly where getSessionStats throws, which has already run).

function usageSplits(pi, all) {
	const { createUsageTotals, addUsageToTotals } = pi;
	const byKind = new Map();
	const bySource = {
		assistant: createUsageTotals(),
		toolResult: createUsageTotals(),
		usageEntry: createUsageTotals(),
		compaction: createUsageTotals(),
		branchSummary: createUsageTotals(),
	};
	for (const e of all) {
		if (typeof e !== "object") continue;
		if (e.type === "usage") {
			const kind = String(e.kind);
			if (!byKind.has(kind)) byKind.set(kind, { count: 0, totals: createUsageTotals() });
			const k = byKind.get(kind);
			k.count += 1;
			addUsageToTotals(k.totals, e.usage);
			addUsageToTotals(bySource.usageEntry, e.usage);
		} else if (e.type === "compaction") {
			if (e.usage) addUsageToTotals(bySource.compaction, e.usage);
		} else if (e.type === "branch_summary") {
			if (e.usage) addUsageToTotals(bySource.branchSummary, e.usage);
		} else if (e.type === "message" && e.message?.role === "assistant") {
			addUsageToTotals(bySource.assistant, e.message.usage);
		} else if (e.type === "message" && e.message?.role === "toolResult" && e.message.usage) {
			addUsageToTotals(bySource.toolResult, e.message.usage);
		}
	}
	const kinds = new Map([...byKind].map(([kind, { count, totals }]) => [kind, { count, ...totalsOut(totals) }]));
	return {
		usageByKind: sortedObject(kinds),
		usageBySource: Object.fromEntries(Object.entries(bySource).map(([source, t]) => [source, totalsOut(t)])),
	};
}

function totalsOut(t) {
	return { input: t.input, output: t.output, cacheRead: t.cacheRead, cacheWrite: t.cacheWrite, cost: t.cost };
}

// ---------------------------------------------------------------------------------------------
// (harness) Context edits and compactions, counted around Pi's results

/**
 * context_edit entries: in the file, on the active path, among the context entries; and how many
 * context entries the projection rewrote. The rule is buildSessionProjection's (session-manager.js):
 * the last context_edit per targetId among the context entries applies to the entry with that id,
 * except to an older compaction kept past index 0 (it projects nothing); `replacement: null`
 * omits the entry, anything else replaces its content.
 */
function contextEditCounts(all, onBranch, contextEntries) {
	const edits = all.filter((e) => e.type === "context_edit");
	const latestEdit = new Map();
	for (const e of contextEntries) if (e.type === "context_edit") latestEdit.set(e.targetId, e);
	let omitted = 0;
	let replaced = 0;
	contextEntries.forEach((entry, index) => {
		if (entry.type === "compaction" && index > 0) return;
		const edit = latestEdit.get(entry.id);
		if (!edit) return;
		if (edit.replacement === null) omitted += 1;
		else replaced += 1;
	});
	return {
		total: edits.length,
		onPath: edits.filter((e) => onBranch.has(e)).length,
		inContext: contextEntries.filter((e) => e.type === "context_edit").length,
		applied: omitted + replaced,
		omitted,
		replaced,
	};
}

/** The latest compaction on the active path (Pi's getLatestCompactionEntry) and counts. */
function compactionSummary(pi, all, branch, ref) {
	const { getLatestCompactionEntry } = pi;
	const latest = getLatestCompactionEntry(branch);
	const summary = {
		total: all.filter((e) => e.type === "compaction").length,
		onPath: branch.filter((e) => e.type === "compaction").length,
		latestId: ref.id(latest),
		latestTokensBefore: null,
		latestFirstKeptEntryId: null,
		latestRetainsNone: null,
		latestFirstKeptOnPath: null,
		latestHasSystemMessage: null,
	};
	if (latest) {
		summary.latestTokensBefore = latest.tokensBefore ?? null;
		summary.latestFirstKeptEntryId = ref.reference(latest.firstKeptEntryId);
		summary.latestRetainsNone = latest.firstKeptEntryId === latest.id;
		// Same test as buildContextEntries' walk over the path before the compaction.
		const before = branch.slice(0, branch.indexOf(latest));
		summary.latestFirstKeptOnPath = before.some((e) => e.id === latest.firstKeptEntryId);
		summary.latestHasSystemMessage = Boolean(latest.systemMessage);
	}
	return summary;
}

/**
 * Per compaction entry of the file, in file order: its own fields and usage, then the session as
 * if that compaction were the leaf, through Pi's functions with an explicit leaf id over the same
 * entries and the manager's own id index (so a reused id resolves to its last holder, as in Pi).
 */
function compactionEffects(pi, sm, all, onBranch, ref) {
	const { createUsageTotals, addUsageToTotals, buildSessionProjection, buildContextEntries } = pi;
	const { estimateProjectedContextTokens } = pi;
	const byId = sm.byId;
	return all
		.filter((e) => typeof e === "object" && e.type === "compaction")
		.map((c) => {
			const usage = createUsageTotals();
			if (c.usage) addUsageToTotals(usage, c.usage);
			const effect = {
				id: ref.id(c),
				onActivePath: onBranch.has(c),
				tokensBefore: c.tokensBefore ?? null,
				firstKeptEntryId: ref.reference(c.firstKeptEntryId),
				retainsNone: Boolean(c.id) && c.firstKeptEntryId === c.id,
				hasSystemMessage: Boolean(c.systemMessage),
				usageTokens: usage.input + usage.output + usage.cacheRead + usage.cacheWrite,
				usageCost: usage.cost,
				pathLengthAtCompaction: null,
				contextEntriesAfter: null,
				projectedMessagesAfter: null,
				estimatedTokensAfter: null,
			};
			if (!canBeLeaf(byId, c.id)) return effect;
			const branchAt = sm.getBranch(c.id);
			const projectionAt = buildSessionProjection(all, c.id, byId);
			effect.pathLengthAtCompaction = branchAt.length;
			effect.contextEntriesAfter = buildContextEntries(all, c.id, byId).length;
			effect.projectedMessagesAfter = projectionAt.messages.length;
			effect.estimatedTokensAfter = estimateProjectedContextTokens(projectionAt, branchAt).tokens;
			return effect;
		});
}

/**
 * (harness guard) Whether Pi's walks can use `id` as the leaf: a falsy id makes them pick another
 * leaf (getBranch(undefined) takes the session's, buildSessionPath the last entry), and a parent
 * cycle above the entry makes them loop forever. Either way the figures are left null.
 */
function canBeLeaf(byId, id) {
	return Boolean(id) && walkEnds(byId, byId.get(id));
}

// ---------------------------------------------------------------------------------------------
// (harness guards) Pi's walks have no cycle guard: on a parent cycle getBranch() and
// buildSessionPath() grow an array until V8 aborts the process (a fatal error, not an exception),
// and getTree() loops forever. Instead of dying or hanging, the oracle reports such a file as
// "error", Pi being unable to load it, at the point where Pi's call would start.

/** An error record for a call of Pi's that would never return; printed without a stack. */
class NeverReturns extends Error {
	constructor(call, cause) {
		super(`oracle guard: Pi's ${call} would never return on this file (${cause})`);
	}
}

/** Whether Pi's parent walk from `start` ends: `parentId` looked up in `byId` until it fails. */
function walkEnds(byId, start) {
	const visited = new Set();
	for (let e = start; e; e = e.parentId ? byId.get(e.parentId) : undefined) {
		if (visited.has(e)) return false;
		visited.add(e);
	}
	return true;
}

/**
 * Whether SessionManager#getTree() would loop. It makes one node per id (entries sharing an id
 * share the node of the last of them), roots the entries whose parentId is null, their own id or
 * unknown, and hangs every other entry's node under its parent's node; then it visits the nodes
 * from the roots with no visited set. So it loops exactly when a cycle of these links is
 * reachable from a root, which duplicate ids make possible even when the leaf's walk ends.
 */
function treeHasCycle(all) {
	const ids = new Set(all.map((e) => e.id));
	const roots = [];
	const children = new Map();
	for (const e of all) {
		if (e.parentId === null || e.parentId === e.id || !ids.has(e.parentId)) roots.push(e.id);
		else {
			if (!children.has(e.parentId)) children.set(e.parentId, []);
			children.get(e.parentId).push(e.id);
		}
	}
	// Depth-first over ids, iteratively: a link back to an id on the current path is a cycle.
	const state = new Map(); // id -> "open" (on the current path) | "done"
	for (const root of roots) {
		if (state.has(root)) continue;
		state.set(root, "open");
		const stack = [{ id: root, next: 0 }];
		while (stack.length > 0) {
			const top = stack[stack.length - 1];
			const kids = children.get(top.id) ?? [];
			if (top.next === kids.length) {
				state.set(top.id, "done");
				stack.pop();
				continue;
			}
			const kid = kids[top.next++];
			if (state.get(kid) === "open") return true;
			if (!state.has(kid)) {
				state.set(kid, "open");
				stack.push({ id: kid, next: 0 });
			}
		}
	}
	return false;
}

// ---------------------------------------------------------------------------------------------

/** The error's message and the two innermost stack frames, on one line. */
function firstStackLines(err) {
	if (err instanceof NeverReturns) return err.message;
	return String(err?.stack ?? err)
		.split("\n")
		.slice(0, 3)
		.join(" | ");
}
