#!/usr/bin/env node
// make-edge.mjs — regenerates the hand-made edge-case session files of this folder, byte for byte.
//
//   node make-edge.mjs                                   # (re)write every *.jsonl file of the set
//   node make-edge.mjs --readme oracle.expected.ndjson    # (re)write README.md from the oracle output
//   node make-edge.mjs --oracle                          # run the oracle (PISA_ORACLE, default
//                                                        # ../../oracle/oracle.mjs) on a temp copy of
//                                                        # the set, write oracle.expected.ndjson, then README.md
//
// Every line is written with JSON.stringify (as Pi writes it) except the deliberately damaged
// ones (BOM, CRLF, invalid UTF-8, truncation, raw control characters, non-canonical JSON), which are
// written as raw bytes. Ids, session ids and timestamps are derived from the file name, never random,
// so the output never changes between runs. Stale NN-*.jsonl files of this folder are removed.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const DIR = path.dirname(fileURLToPath(import.meta.url));
const BASE = Date.UTC(2026, 2, 2, 9, 0, 0);
const CWD = "/home/dev/work/pisa-edge";
const SESSION_DIR = "/home/dev/.pi/agent/sessions/--home-dev-work-pisa-edge--";

const sha = (s) => crypto.createHash("sha256").update(s).digest("hex");
const iso = (ms) => new Date(ms).toISOString();

// ---- models and usage ---------------------------------------------------------------
const M = {
	sonnet: { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
	opus: { api: "anthropic-messages", provider: "anthropic", model: "claude-opus-4-5", price: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 } },
	haiku: { api: "anthropic-messages", provider: "anthropic", model: "claude-haiku-4-5", price: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 } },
	codex: { api: "openai-responses", provider: "openai", model: "gpt-5.1-codex", price: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 } },
	gemini: { api: "google-generative-ai", provider: "google", model: "gemini-2.5-pro", price: { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 0 } },
	openrouter: { api: "openai-completions", provider: "openrouter", model: "openrouter/auto", price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
};

/** A Usage object as Pi writes it (pi-ai calculateCost: 1h cache writes cost 2x base input). */
function usage(m, input, output, cacheRead = 0, cacheWrite = 0, extra = {}) {
	const u = { input, output, cacheRead, cacheWrite };
	if (extra.cacheWrite1h !== undefined) u.cacheWrite1h = extra.cacheWrite1h;
	if (extra.reasoning !== undefined) u.reasoning = extra.reasoning;
	u.totalTokens = extra.totalTokens !== undefined ? extra.totalTokens : input + output + cacheRead + cacheWrite;
	if (u.totalTokens === null) delete u.totalTokens;
	const p = m.price;
	const long = extra.cacheWrite1h ?? 0;
	const c = {
		input: (p.input / 1000000) * input,
		output: (p.output / 1000000) * output,
		cacheRead: (p.cacheRead / 1000000) * cacheRead,
		cacheWrite: (p.cacheWrite * (cacheWrite - long) + p.input * 2 * long) / 1000000,
	};
	c.total = c.input + c.output + c.cacheRead + c.cacheWrite;
	c.totalFromProvider = false;
	u.cost = c;
	return u;
}
/** A usage with explicit cost components; total summed like Pi does. */
function usageCost(input, output, cacheRead, cacheWrite, costs) {
	const [ci, co, ccr, ccw] = costs;
	return {
		input,
		output,
		cacheRead,
		cacheWrite,
		totalTokens: input + output + cacheRead + cacheWrite,
		cost: { input: ci, output: co, cacheRead: ccr, cacheWrite: ccw, total: ci + co + ccr + ccw, totalFromProvider: false },
	};
}
const ZERO = () => ({
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

// ---- content blocks -----------------------------------------------------------------
const text = (t) => ({ type: "text", text: t });
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const img = () => ({ type: "image", data: PNG, mimeType: "image/png" });
const think = (t, sig) => (sig === undefined ? { type: "thinking", thinking: t } : { type: "thinking", thinking: t, thinkingSignature: sig });
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const toolDecl = (name, description, properties = {}, required = []) => ({
	name,
	description,
	parameters: { type: "object", properties, required },
});
const T_READ = toolDecl("read", "Read a file from disk.", { path: { type: "string", description: "File path" } }, ["path"]);
const T_BASH = toolDecl("bash", "Run a shell command.", { command: { type: "string" }, timeout: { type: "number" } }, ["command"]);
const T_EDIT = toolDecl("edit", "Replace text in a file.", { path: { type: "string" }, oldText: { type: "string" }, newText: { type: "string" } }, ["path", "oldText", "newText"]);
const T_WRITE = toolDecl("write", "Write a file.", { path: { type: "string" }, content: { type: "string" } }, ["path", "content"]);
const T_READ2 = toolDecl("read", "Read a file from disk (v2: supports offset and limit).", { path: { type: "string" }, offset: { type: "number" }, limit: { type: "number" } }, ["path"]);

// ---- a session being written -----------------------------------------------------------
class Session {
	constructor(rel, header = "v3", opts = {}) {
		this.rel = rel;
		this.no = Number(path.basename(rel).slice(0, 2));
		this.t0 = BASE + this.no * 3600000;
		this.ms = this.t0;
		this.parts = [];
		this.leaf = null;
		this.v1 = !!opts.v1;
		this.idn = 0;
		this.k = 0;
		this.pidx = -1; // index of the last parsed line (header = 0), as v1 firstKeptEntryIndex counts
		this.eol = "\n";
		this.finalNewline = true;
		if (header === "v3") this.line(this.header3());
		else if (header) this.line(header);
	}
	sid() {
		const h = sha(`session:${this.rel}`);
		const t = this.t0.toString(16).padStart(12, "0");
		return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${h.slice(0, 3)}-8${h.slice(3, 6)}-${h.slice(6, 18)}`;
	}
	header3(extra = {}) {
		return { type: "session", version: 3, id: this.sid(), timestamp: iso(this.t0), cwd: CWD, ...extra };
	}
	tick() {
		this.k++;
		this.ms += 1500 + ((this.k * 7919) % 4000);
		return this.ms;
	}
	newId() {
		return sha(`${this.rel}:${this.idn++}`).slice(0, 8);
	}
	line(obj) {
		this.parts.push(JSON.stringify(obj));
		this.pidx++;
		return this.pidx;
	}
	/** A raw line (string or Buffer); `parses` = Pi keeps it as an entry (v1 index bookkeeping). */
	raw(s, parses = false) {
		this.parts.push(s);
		if (parses) this.pidx++;
	}
	/** Append an entry. eo: {id, parentId, detached, fieldsFirst}; id/parentId undefined = key omitted. */
	entry(type, fields, eo = {}) {
		const ms = this.tick();
		const f = typeof fields === "function" ? fields(ms) : fields;
		let obj;
		if (this.v1) {
			obj = { type, timestamp: iso(ms), ...f };
		} else {
			const id = "id" in eo ? eo.id : this.newId();
			const parentId = "parentId" in eo ? eo.parentId : this.leaf;
			const base = { id, parentId, timestamp: iso(ms) };
			obj = eo.fieldsFirst ? { type, ...f, ...base } : { type, ...base, ...f };
			if (!eo.detached) this.leaf = id;
		}
		this.lastIndex = this.line(obj);
		this.lastMs = ms;
		return obj.id;
	}
	branch(id) {
		this.leaf = id;
		return this;
	}
	msg(message, eo) {
		return this.entry("message", (ms) => ({ message: typeof message === "function" ? message(ms) : message }), eo);
	}
	user(content, eo) {
		return this.msg((ms) => ({ role: "user", content, timestamp: ms - 7 }), eo);
	}
	asst(m, content, u, mo = {}, eo) {
		const stopReason = mo.stopReason ?? (content?.some?.((b) => b.type === "toolCall") ? "toolUse" : "stop");
		return this.msg((ms) => {
			const msg = { role: "assistant", content, api: m.api, provider: m.provider, model: m.model };
			if (mo.responseModel) msg.responseModel = mo.responseModel;
			msg.usage = u;
			msg.stopReason = stopReason;
			if (mo.errorMessage) msg.errorMessage = mo.errorMessage;
			msg.timestamp = ms - 3;
			return msg;
		}, eo);
	}
	tool(toolCallId, toolName, content, mo = {}, eo) {
		return this.msg((ms) => {
			const msg = { role: "toolResult", toolCallId, toolName, content };
			if (mo.details) msg.details = mo.details;
			if (mo.usage) msg.usage = mo.usage;
			msg.isError = !!mo.isError;
			msg.timestamp = ms - 2;
			return msg;
		}, eo);
	}
	sys(fields, eo, { noTimestamp = false } = {}) {
		return this.msg((ms) => {
			const msg = { role: "system", content: fields.content ?? "" };
			if (fields.content === null) msg.content = null;
			if (fields.sections) msg.sections = fields.sections;
			if (fields.toolsAdded) msg.toolsAdded = fields.toolsAdded;
			if (fields.toolsRemoved) msg.toolsRemoved = fields.toolsRemoved;
			if (!noTimestamp) msg.timestamp = ms - 9;
			return msg;
		}, eo);
	}
	bash(command, output, extra = {}, eo) {
		return this.msg((ms) => ({ role: "bashExecution", command, output, exitCode: 0, cancelled: false, truncated: false, ...extra, timestamp: ms - 5 }), eo);
	}
	custom(customType, data, eo = {}) {
		return this.entry("custom", { customType, data }, { ...eo, fieldsFirst: true });
	}
	customMsg(customType, content, display, details, eo = {}) {
		return this.entry("custom_message", { customType, content, display, details }, { ...eo, fieldsFirst: true });
	}
	compaction(c, eo) {
		return this.entry("compaction", (ms) => {
			const f = {
				summary: c.summary,
				firstKeptEntryId: c.firstKeptEntryId,
				tokensBefore: c.tokensBefore,
				details: c.details ?? { readFiles: [], modifiedFiles: [] },
				usage: c.usage,
				fromHook: c.fromHook ?? false,
			};
			if (c.systemMessage) f.systemMessage = { ...c.systemMessage, timestamp: ms };
			return f;
		}, eo);
	}
	/** v1 compaction: firstKeptEntryIndex instead of firstKeptEntryId. */
	compactionV1(summary, firstKeptEntryIndex, tokensBefore) {
		return this.entry("compaction", { summary, firstKeptEntryIndex, tokensBefore });
	}
	branchSummary(parentId, fromId, summary, u, eo = {}) {
		return this.entry("branch_summary", { fromId, summary, details: { readFiles: [], modifiedFiles: [] }, usage: u, fromHook: false }, { parentId, ...eo });
	}
	edit(targetId, replacement, eo) {
		return this.entry("context_edit", { targetId, replacement }, eo);
	}
	label(targetId, label, eo) {
		return this.entry("label", { targetId, label }, eo);
	}
	info(name, eo) {
		return this.entry("session_info", { name }, eo);
	}
	modelChange(provider, modelId, eo) {
		return this.entry("model_change", { provider, modelId }, eo);
	}
	thinking(level, eo) {
		return this.entry("thinking_level_change", { thinkingLevel: level }, eo);
	}
	usageEntry(kind, m, u, note, eo) {
		const f = { kind, provider: m.provider, model: m.model, usage: u };
		if (kind === undefined) delete f.kind;
		if (note) f.note = note;
		return this.entry("usage", f, eo);
	}
	/** A short user -> assistant exchange; returns [userId, assistantId]. */
	turn(q, a, m = M.sonnet, u = usage(M.sonnet, 1200, 80, 0, 0)) {
		const uid = this.user(q);
		const aid = this.asst(m, [text(a)], u);
		return [uid, aid];
	}
	buffer() {
		const bufs = [];
		this.parts.forEach((p, i) => {
			bufs.push(Buffer.isBuffer(p) ? p : Buffer.from(p, "utf8"));
			if (i < this.parts.length - 1 || this.finalNewline) bufs.push(Buffer.from(this.eol, "utf8"));
		});
		return Buffer.concat(bufs);
	}
}

/** Growing usage for a conversation: each call adds to the context. */
function ctxUsage(m, ctx, out, cached = 0) {
	return usage(m, ctx - cached, out, cached, 0);
}

// ---- the files ---------------------------------------------------------------------------
const FILES = [];
/** rel: path under this folder; behaviour: one line for the README; keys: oracle fields shown in it. */
function def(rel, behaviour, keys, build) {
	FILES.push({ rel, behaviour, keys, build });
}
const RAWK = ["raw"];
const EST = ["estimate", "contextUsageTokens"];

// ===== §1 reading ==========================================================================
def("01-blank-and-whitespace-lines.jsonl",
	"Empty lines and lines of spaces/tabs between entries and at the end are skipped; an indented JSON line with trailing spaces still parses.",
	["status", "lines", "entryCount", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.raw("");
		s.user("List the files in src/.");
		s.raw("   ");
		s.raw("");
		s.asst(M.sonnet, [text("src/ holds main.rs and lib.rs.")], usage(M.sonnet, 1500, 40));
		s.raw("\t\t");
		s.raw(" \t ");
		// an indented JSON line with trailing blanks: JSON.parse accepts surrounding whitespace
		const id = s.newId();
		s.raw(`  ${JSON.stringify({ type: "message", id, parentId: s.leaf, timestamp: iso(s.tick()), message: { role: "user", content: "Thanks.", timestamp: s.ms - 7 } })} \t `, true);
		s.leaf = id;
		s.raw("");
		s.raw("");
		return s;
	});

def("02-bom-only-line.jsonl",
	"A line holding only a UTF-8 BOM (EF BB BF) is blank to Pi (String#trim strips U+FEFF). The oracle's raw diagnostics (not Pi) count it as unparsable.",
	["status", "entryCount", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.user("What does the BOM do?");
		s.raw(Buffer.from([0xef, 0xbb, 0xbf]));
		s.asst(M.sonnet, [text("It marks byte order; UTF-8 does not need it.")], usage(M.sonnet, 1400, 30));
		return s;
	});

def("03-unicode-space-lines.jsonl",
	"Lines of only NBSP, U+3000, U+2028, VT+FF are blank to Pi (String#trim); a line of only U+0085 (NEL) is NOT trimmed by JS (Rust's trim would) and is a malformed line.",
	["status", "entryCount", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.user("Hello");
		s.raw("\u00a0\u00a0");
		s.raw("\u3000");
		s.raw("\u2028");
		s.raw("\v\f");
		s.asst(M.sonnet, [text("Hi.")], usage(M.sonnet, 1300, 5));
		s.raw("\u0085");
		s.user("Bye");
		return s;
	});

def("04-bom-before-header.jsonl",
	"A BOM before the header line makes that line unparsable; the first parsed line is then a message, so Pi rejects the file.",
	["status", "rejectReason", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.user("This session starts with a BOM.");
		s.asst(M.sonnet, [text("Noted.")], usage(M.sonnet, 1300, 5));
		s.parts[0] = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(s.parts[0], "utf8")]);
		return s;
	});

def("05-crlf-line-endings.jsonl",
	"Every line ends with CRLF; the CR is JSON whitespace, every line parses.",
	["status", "lines", "entryCount", "raw", "stats.tokens", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.eol = "\r\n";
		s.turn("Written on Windows?", "Yes, with CRLF line endings.");
		s.user("And the last line too.");
		return s;
	});

def("06-malformed-lines-mid-file.jsonl",
	"Two malformed lines mid-file (a cut JSON object and a valid entry prefixed by a BOM) are skipped; the entries around them are kept and chained.",
	["status", "entryCount", "raw", "activePathLength"],
	(rel) => {
		const s = new Session(rel);
		const u1 = s.user("Start.");
		s.raw('{"type":"message","id":"0badf00d","parentId":"');
		const a1 = s.asst(M.sonnet, [text("Started.")], usage(M.sonnet, 1300, 5));
		// a whole, valid entry with a BOM in front: JSON.parse fails on U+FEFF
		const lost = JSON.stringify({ type: "custom", customType: "note", data: { n: 1 }, id: "0bad0bad", parentId: a1, timestamp: iso(s.tick()) });
		s.raw(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lost)]));
		s.user("Continue.");
		void u1;
		return s;
	});

def("07-truncated-last-line.jsonl",
	"The last line is cut off mid-write (no newline, not parsable): left out; Pi would append a newline to the file.",
	["status", "entryCount", "leafType", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Write a haiku.", "Old pond, frog jumps in.");
		s.user("Another one?");
		const full = JSON.stringify({ type: "message", id: s.newId(), parentId: s.leaf, timestamp: iso(s.tick()), message: { role: "assistant", content: [text("Autumn moonlight, a worm digs silently")], api: "anthropic-messages" } });
		s.raw(full.slice(0, 95));
		s.finalNewline = false;
		return s;
	});

def("08-unterminated-valid-last-line.jsonl",
	"The last line has no newline but is complete JSON: it is an entry like any other (Pi keeps it, and would append the newline).",
	["status", "entryCount", "leafType", "raw", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Count to three.", "1, 2, 3.");
		s.user("Now to four.");
		s.asst(M.sonnet, [text("1, 2, 3, 4.")], usage(M.sonnet, 1340, 12));
		s.finalNewline = false;
		return s;
	});

def("09-unterminated-whitespace-tail.jsonl",
	"The file ends in spaces without a newline: nothing to parse, but Pi's pending tail is non-empty so it would append a newline.",
	["status", "entryCount", "lines", "raw"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Ping", "Pong");
		s.raw("   ");
		s.finalNewline = false;
		return s;
	});

def("10-empty-file.jsonl", "A zero-byte file: rejected.", ["status", "rejectReason", "bytes"], () => Buffer.alloc(0));

def("11-only-blank-lines.jsonl", "Only blank and whitespace lines: rejected.", ["status", "rejectReason", "lines", "raw"], () => Buffer.from("\n\n   \n\t\n\r\n"));

def("12-only-malformed-and-falsy-lines.jsonl",
	"A cut header, garbage and the falsy JSON values null, 0, false, \"\" (dropped by Pi): no entry at all, rejected.",
	["status", "rejectReason", "lines"],
	() => Buffer.from('{"type":"session","version":3,"id":"019a\nnull\n0\nfalse\n""\nnot json at all\n'));

def("13-extension-transcript.jsonl",
	"A .jsonl written by an extension into the session folder (first parsed line is not a session header): rejected, never counted.",
	["status", "rejectReason"],
	(rel) => {
		const s = new Session(rel, null);
		s.line({ event: "start", extension: "plan-mode", ts: BASE + 13 * 3600000 });
		s.line({ role: "user", content: "Plan the refactor.", ts: BASE + 13 * 3600000 + 1000 });
		s.line({ role: "assistant", content: "1. Split the parser.", usage: usage(M.haiku, 300, 20), ts: BASE + 13 * 3600000 + 4000 });
		return s;
	});

def("14-header-id-not-string.jsonl",
	"A session header whose id is a number: not a valid header, the file is rejected.",
	["status", "rejectReason"],
	(rel) => {
		const s = new Session(rel, { type: "session", version: 3, id: 20260302, timestamp: iso(BASE + 14 * 3600000), cwd: CWD });
		s.turn("Hi", "Hello");
		return s;
	});

def("15-header-after-garbage-and-falsy.jsonl",
	"Malformed and falsy (null, \"\") lines before the header: Pi skips/drops them, the header is still the first parsed entry, the file loads. The oracle's raw diagnostics count the falsy lines as unparsable.",
	["status", "entryCount", "raw"],
	(rel) => {
		const s = new Session(rel, null);
		s.raw("garbage {");
		s.raw("null");
		s.raw('""');
		s.line(s.header3());
		s.turn("Are we loaded?", "Yes.");
		return s;
	});

def("16-scalar-lines-v3.jsonl",
	"In a v3 file, lines null, 0, false, \"\" are dropped; 42, [1], \"s\", true and {} are kept as entries (tree roots, no id); the conversation around them is unaffected.",
	["status", "entryCount", "entryCounts", "raw", "activePathLength", "treeRoots", "projectedMessageCount"],
	(rel) => {
		const s = new Session(rel);
		s.user("First question.");
		s.raw("null");
		s.raw("42", true);
		const a1 = s.asst(M.sonnet, [text("First answer.")], usage(M.sonnet, 1300, 8));
		s.raw("0");
		s.raw("[1]", true);
		s.raw("false");
		s.raw('"s"', true);
		s.raw('""');
		s.raw("true", true);
		s.raw("{}", true);
		s.branch(a1);
		s.turn("Second question.", "Second answer.", M.sonnet, usage(M.sonnet, 1330, 8));
		return s;
	});

def("17-second-session-line.jsonl",
	"A second `session` line mid-file is neither an entry nor a tree node (Pi ignores it); the first header is the session.",
	["status", "sessionId", "entryCount", "extraHeaderLines", "activePathLength"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Before the second header.", "OK.");
		s.line({ type: "session", version: 3, id: "019cadde-0000-7000-8000-000000000017", timestamp: iso(s.tick()), cwd: "/somewhere/else" });
		s.turn("After the second header.", "Still the same session.");
		return s;
	});

def("18-lone-surrogates.jsonl",
	"Escaped lone surrogates (\\ud83d alone, \\udc00 alone) and an escaped valid pair \\ud83d\\ude00 inside projected text and tool-call arguments. JS counts each lone surrogate as 1 UTF-16 unit and the pair as 2; JSON.stringify re-escapes lone surrogates in arguments (6 chars each). The escaped pair is hand-written (JSON.stringify would write the emoji raw).",
	["status", "estimate", "projectedMessageCount"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Start.", "Ready.");
		const id = s.user("high \ud83d alone, low \udc00 alone, pair \ud83d\ude00 ok");
		// write the valid pair as escapes on that line (JSON.stringify writes it raw)
		const i = s.parts.length - 1;
		s.parts[i] = s.parts[i].replace("\ud83d\ude00", "\\ud83d\\ude00");
		void id;
		s.asst(M.sonnet, [call("toolu_01LoneSurrogate", "grep", { pattern: "\ud83d", flags: ["-n"] })], usage(M.sonnet, 1400, 30), { stopReason: "aborted" });
		return s;
	});

def("19-invalid-utf8-in-string.jsonl",
	"Invalid UTF-8 bytes inside a JSON string of a trailing user message: Pi decodes with U+FFFD replacement (WHATWG maximal subparts: FF, C3+'A', E2 82+'B', C0 AF, ED A0 80, F4 90 80 80, 80 give 1+1+1+2+3+4+1 = 13 U+FFFD), the line still parses and its length counts in the estimate.",
	["status", "entryCount", "raw", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Read the log.", "The log is binary-ish.");
		const id = s.newId();
		const line = JSON.stringify({ type: "message", id, parentId: s.leaf, timestamp: iso(s.tick()), message: { role: "user", content: "bytes:@1@|@2@A|@3@B|@4@|@5@|@6@|@7@.", timestamp: s.ms - 7 } });
		const bad = { 1: [0xff], 2: [0xc3], 3: [0xe2, 0x82], 4: [0xc0, 0xaf], 5: [0xed, 0xa0, 0x80], 6: [0xf4, 0x90, 0x80, 0x80], 7: [0x80] };
		const pieces = line.split(/@(\d)@/);
		const bufs = pieces.map((p, k) => (k % 2 === 1 ? Buffer.from(bad[p]) : Buffer.from(p, "utf8")));
		s.raw(Buffer.concat(bufs), true);
		s.leaf = id;
		return s;
	});

def("20-invalid-utf8-outside-string.jsonl",
	"Invalid UTF-8 bytes between JSON tokens (and after the closing brace): decoded to U+FFFD, which JSON.parse rejects: malformed lines.",
	["status", "entryCount", "raw"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("One.", "One.");
		const l1 = JSON.stringify({ type: "custom", customType: "x", data: {}, id: "0badbad1", parentId: a1, timestamp: iso(s.tick()) });
		const cut = l1.indexOf(",") + 1; // between two members, outside any string
		s.raw(Buffer.concat([Buffer.from(l1.slice(0, cut)), Buffer.from([0xff]), Buffer.from(l1.slice(cut))]));
		const l2 = JSON.stringify({ type: "custom", customType: "x", data: {}, id: "0badbad2", parentId: a1, timestamp: iso(s.tick()) });
		s.raw(Buffer.concat([Buffer.from(l2), Buffer.from([0xc3])]));
		s.user("Two.");
		return s;
	});

def("21-raw-control-chars-in-string.jsonl",
	"A raw TAB and a raw U+0001 inside JSON strings are invalid for JSON.parse: two malformed lines. A raw DEL (0x7F) is valid JSON (JSON.stringify does not escape it): that line is kept and counts 1 char.",
	["status", "entryCount", "raw", "estimate"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("Show the table.", "col1\tcol2");
		s.raw(JSON.stringify({ type: "message", id: "0badc0de", parentId: a1, timestamp: iso(s.tick()), message: { role: "user", content: "TAB>\t<", timestamp: s.ms } }).replace("\\t", "\t"));
		s.raw(JSON.stringify({ type: "message", id: "0badc0d1", parentId: a1, timestamp: iso(s.tick()), message: { role: "user", content: "SOH>\u0001<", timestamp: s.ms } }).replace("\\u0001", "\u0001"));
		s.user("DEL>\u007f<");
		return s;
	});

// ---- versions and migration -----------------------------------------------------------------
function v1Header(rel, extra = {}) {
	const no = Number(path.basename(rel).slice(0, 2));
	const h = sha(`session:${rel}`);
	return { type: "session", ...extra.pre, id: `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-a${h.slice(15, 18)}-${h.slice(18, 30)}`, timestamp: iso(BASE + no * 3600000), cwd: CWD, ...extra.post };
}

def("22-v1-compaction-first-kept-index.jsonl",
	"A v1 file (no version, no ids, header provider/modelId/thinkingLevel) with a compaction whose firstKeptEntryIndex (index into the file's entries, header = 0) names a user message: migration turns it into firstKeptEntryId.",
	["status", "version", "migratedFrom", "entryCount", "activePathLength", "contextEntryCount", "projectedRoles", "model", "thinkingLevel", "compactions", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel, v1Header(rel, { post: { provider: "anthropic", modelId: "claude-opus-4-5", thinkingLevel: "off" } }), { v1: true });
		s.user([text("Read @src/main.rs and tell me what it does.")]);
		s.asst(M.opus, [call("toolu_01Read", "read", { path: "/home/dev/work/pisa-edge/src/main.rs" })], usage(M.opus, 2775, 141));
		s.tool("toolu_01Read", "read", [text("fn main() {\n    println!(\"hello\");\n}\n")]);
		s.asst(M.opus, [text("It prints hello.")], usage(M.opus, 2950, 12, 0, 0));
		s.thinking("high");
		const keep = s.user([text("Now add a --name flag.")]);
		void keep;
		const keepIndex = s.lastIndex;
		s.asst(M.opus, [text("Added the flag with clap.")], usage(M.opus, 3100, 220));
		s.compactionV1("# Context Checkpoint\nThe user asked what main.rs does; it prints hello.", keepIndex, 3320);
		s.user([text("Add a test for it.")]);
		s.asst(M.opus, [text("Test added.")], usage(M.opus, 1200, 90, 0, 0));
		return s;
	});

def("23-v1-compaction-index-header-and-past-end.jsonl",
	"v1 compactions whose firstKeptEntryIndex is 0 (the header) and 999 (past the end): neither gets a firstKeptEntryId, so each keeps nothing before itself.",
	["status", "migratedFrom", "contextEntryCount", "compactions", "estimate", "contextUsageTokens", "compactionEffects"],
	(rel) => {
		const s = new Session(rel, v1Header(rel), { v1: true });
		s.turn("One.", "One.", M.sonnet, usage(M.sonnet, 1000, 5));
		s.turn("Two.", "Two.", M.sonnet, usage(M.sonnet, 1010, 5));
		s.compactionV1("Counted to two.", 0, 1015);
		s.turn("Three.", "Three.", M.sonnet, usage(M.sonnet, 400, 5));
		s.compactionV1("Counted to three.", 999, 405);
		s.user("Four?");
		return s;
	});

def("24-v1-compaction-index-self-and-forward.jsonl",
	"v1 compactions whose firstKeptEntryIndex is their own index (migration gives them an id first: retain-none) and a later entry (no id yet when migrated: undefined, nothing kept).",
	["status", "compactions", "contextEntryCount", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel, v1Header(rel), { v1: true });
		s.turn("Alpha.", "Alpha.", M.sonnet, usage(M.sonnet, 1000, 5));
		s.turn("Beta.", "Beta.", M.sonnet, usage(M.sonnet, 1010, 5));
		s.compactionV1("Alpha and beta.", s.pidx + 1, 1015);
		s.turn("Gamma.", "Gamma.", M.sonnet, usage(M.sonnet, 300, 5));
		s.compactionV1("Gamma too.", s.pidx + 2, 305);
		s.turn("Delta.", "Delta.", M.sonnet, usage(M.sonnet, 320, 5));
		return s;
	});

def("25-v1-index-counts-parsed-entries.jsonl",
	"v1 firstKeptEntryIndex indexes Pi's parsed entries: the header and a second `session` line count, a blank line, a malformed line and a `null` line do not. The target is physical line 8 (1-based) = parsed entry 4 = getEntries() #2.",
	["status", "entryCount", "extraHeaderLines", "raw", "compactions", "contextEntryCount", "compactionEffects"],
	(rel) => {
		const s = new Session(rel, v1Header(rel), { v1: true });
		s.user("First.");
		s.raw("");
		s.raw('{"type":"message","timestamp":');
		s.asst(M.sonnet, [text("First.")], usage(M.sonnet, 1000, 5));
		s.raw("null");
		s.line({ type: "session", id: "second-header-in-v1", timestamp: iso(s.tick()), cwd: CWD });
		s.user("Kept from here.");
		const target = s.lastIndex;
		s.asst(M.sonnet, [text("Kept.")], usage(M.sonnet, 1020, 5));
		s.compactionV1("Said first.", target, 1025);
		s.turn("After.", "After.", M.sonnet, usage(M.sonnet, 200, 5));
		return s;
	});

def("26-v1-version-1-header-settings-ignored.jsonl",
	"An explicit `version: 1` migrates like a missing version. The v1 header's provider/modelId/thinkingLevel are ignored: with no assistant message the model is null and the thinking level \"off\".",
	["status", "version", "migratedFrom", "model", "thinkingLevel", "messageCounts", "estimate"],
	(rel) => {
		const s = new Session(rel, v1Header(rel, { pre: { version: 1 }, post: { provider: "anthropic", modelId: "claude-opus-4-5", thinkingLevel: "high" } }), { v1: true });
		s.user([text("Run the tests.")]);
		s.bash("cargo test", "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n");
		s.user([text("All green.")]);
		return s;
	});

def("27-v2-hookmessage.jsonl",
	"A v2 file (ids already there) with `hookMessage` messages: migrated to role `custom` and estimated like custom messages.",
	["status", "version", "migratedFrom", "messageCounts", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel, { type: "session", version: 2, id: new Session(rel, null).sid(), timestamp: iso(BASE + 27 * 3600000), cwd: CWD });
		s.user("Start the timer.");
		s.msg((ms) => ({ role: "hookMessage", customType: "timer", content: "Timer started at 09:00.", display: true, timestamp: ms - 4 }));
		s.asst(M.sonnet, [text("Timer is running.")], usage(M.sonnet, 1500, 9));
		s.msg((ms) => ({ role: "hookMessage", customType: "timer", content: [text("Timer: 5 minutes elapsed.")], display: false, timestamp: ms - 4 }));
		return s;
	});

// ---- ids and tree -------------------------------------------------------------------------
def("28-ids-uuid-and-arbitrary-strings.jsonl",
	"Entry ids that are full UUIDs and arbitrary strings (with a space, an emoji, \"0\", \"null\"): all work as ids and parent references.",
	["status", "leafId", "activePathLength", "treeRoots", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("First.", { id: "3f1c2b9e-8d7a-4c6b-9e5f-1a2b3c4d5e6f" });
		s.asst(M.sonnet, [text("One.")], usage(M.sonnet, 1000, 5), {}, { id: "entry one" });
		s.user("Second.", { id: "🙂" });
		s.asst(M.sonnet, [text("Two.")], usage(M.sonnet, 1010, 5), {}, { id: "0" });
		s.user("Third.", { id: "null" });
		s.asst(M.sonnet, [text("Three.")], usage(M.sonnet, 1020, 5), {}, { id: "a-much-longer-identifier-than-usual-0123456789" });
		return s;
	});

def("29-empty-string-id-ends-walk.jsonl",
	"An entry with id \"\": its child's parentId \"\" is falsy, so Pi's walk to the root stops there (the tree still links it).",
	["status", "activePathLength", "offPathEntries", "treeRoots", "contextEntryCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Root question.");
		s.asst(M.sonnet, [text("Root answer.")], usage(M.sonnet, 1000, 5), {}, { id: "" });
		s.turn("Child question.", "Child answer.", M.sonnet, usage(M.sonnet, 1010, 5));
		return s;
	});

def("30-duplicate-id-later-wins.jsonl",
	"Two entries share id `d0d0d0d0`; Pi's index keeps the later one, so the walk from the leaf goes through the second copy (whose parent is the root) and skips the first answer.",
	["status", "entryCount", "activePathLength", "offPathEntries", "treeRoots", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		const u1 = s.user("Root.");
		s.asst(M.sonnet, [text("First answer (lost from the path).")], usage(M.sonnet, 1000, 9));
		s.user("Duplicate id, first copy.", { id: "d0d0d0d0" });
		const a2 = s.asst(M.sonnet, [text("Reply under the duplicate.")], usage(M.sonnet, 1030, 7));
		s.user("Duplicate id, second copy.", { id: "d0d0d0d0", parentId: u1, detached: true });
		s.branch(a2);
		s.user("Leaf.");
		return s;
	});

def("31-dangling-parent-id.jsonl",
	"An entry whose parentId names no entry: the walk ends there (it acts as a root) and the tree has two roots.",
	["status", "activePathLength", "offPathEntries", "treeRoots", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Old part.", "Old answer.");
		s.branch("deadbeef");
		s.turn("New part after a lost parent.", "New answer.", M.sonnet, usage(M.sonnet, 900, 6));
		return s;
	});

def("32-unknown-entry-type-and-role.jsonl",
	"An unknown entry type (`artifact`) and a message with an unknown role (`reviewer`) are kept and counted; the role projects as-is and estimates 0 tokens.",
	["status", "entryCounts", "messageCounts", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Review this.", "Sending to the reviewer.");
		s.entry("artifact", { name: "diff.patch", bytes: 1234 });
		s.msg((ms) => ({ role: "reviewer", content: "Looks good to me, ship it.", verdict: "approve", timestamp: ms - 1 }));
		s.user("Thanks.");
		return s;
	});

def("33-entries-without-id.jsonl",
	"Entries without `id` mid-file (one with a parentId, one label without parentId whose tree parent becomes the id-less entry): the active path is unaffected.",
	["status", "entryCount", "activePathLength", "offPathEntries", "treeRoots"],
	(rel) => {
		const s = new Session(rel);
		const [u1, a1] = s.turn("Start.", "Started.");
		s.custom("no-id-ext", { note: "written without id" }, { id: undefined, parentId: a1, detached: true });
		s.label(u1, "start", { parentId: undefined, detached: true });
		s.turn("Continue.", "Continued.", M.sonnet, usage(M.sonnet, 1050, 6));
		return s;
	});

def("34-last-entry-without-id.jsonl",
	"The last entry has no id: Pi's leaf id is undefined, so getBranch() is empty (no leaf), yet buildContextEntries() falls back to the last entry and still returns it with its ancestors; the estimate cannot trust usage (no path) and is chars/4.",
	["status", "leafId", "leafIndex", "activePathLength", "contextEntryCount", "projectedMessageCount", "estimate", "contextUsageTokens"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Question.", "Answer.", M.sonnet, usage(M.sonnet, 1200, 4));
		s.user("Follow-up written without an id.", { id: undefined });
		return s;
	});

def("35-self-parented-entry-off-path.jsonl",
	"A custom entry whose parentId is its own id, off the active path (no walk reaches it): getTree() lists it as a root; nothing else changes. (A walk that reached it would never end.)",
	["status", "entryCount", "activePathLength", "offPathEntries", "treeRoots"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("Start.", "Started.");
		s.custom("loop-ext", { state: 1 }, { id: "5e1f5e1f", parentId: "5e1f5e1f", detached: true });
		s.branch(a1);
		s.turn("Go on.", "Going.", M.sonnet, usage(M.sonnet, 1060, 4));
		return s;
	});

// ===== §2 usage ==============================================================================
def("36-response-model-key.jsonl",
	"Assistants with `responseModel` are grouped under provider/responseModel, one without under provider/model; the projection's model uses `model`. Two keys tie at cost 0.0072 and keep first-seen order (stable sort).",
	["status", "usageBreakdown", "model", "stats.cost"],
	(rel) => {
		const s = new Session(rel);
		s.user("Route this.");
		s.asst(M.openrouter, [text("Routed to Claude.")], usage(M.openrouter, 2000, 50), { responseModel: "anthropic/claude-sonnet-4.5" });
		s.user("And this.");
		s.asst(M.openrouter, [text("Routed to GPT.")], usage(M.openrouter, 2100, 60), { responseModel: "openai/gpt-5" });
		s.user("And once more.");
		s.asst(M.openrouter, [text("No response model reported.")], usage(M.openrouter, 2200, 40));
		s.user("Dated snapshot?");
		s.asst(M.sonnet, [text("Answered by a dated snapshot.")], usage(M.sonnet, 2300, 30), { responseModel: "claude-sonnet-4-5-20250929" });
		return s;
	});

def("37-usage-entry-kinds.jsonl",
	"`usage` entries: kind cache_warm, an unknown kind (normal usage) and no kind at all; all count in the totals under provider/model, none in the context.",
	["status", "usageByKind", "usageBySource.usageEntry", "usageBreakdown", "stats.tokens", "stats.cost", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Hello.", "Hi.", M.sonnet, usage(M.sonnet, 3, 5, 12000, 0));
		s.usageEntry("cache_warm", M.sonnet, usage(M.sonnet, 0, 1, 50000, 0));
		s.usageEntry("web_search_summary", M.haiku, usage(M.haiku, 4200, 300), "summarised 5 pages");
		s.usageEntry(undefined, M.gemini, usage(M.gemini, 800, 60));
		return s;
	});

def("38-tool-result-usage.jsonl",
	"A toolResult that carries `usage` (nested model work by the tool): counted in the totals under \"Tools/summaries\".",
	["status", "usageBySource.toolResult", "usageBreakdown", "stats", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Ask the subagent to summarise the repo.");
		s.asst(M.sonnet, [call("toolu_01Sub", "subagent", { task: "summarise the repository" })], usage(M.sonnet, 2500, 40));
		s.tool("toolu_01Sub", "subagent", [text("The repo is a Rust CLI.")], { usage: usage(M.haiku, 18000, 450, 2000, 0), details: { model: "claude-haiku-4-5" } });
		s.asst(M.sonnet, [text("Summary: a Rust CLI.")], usage(M.sonnet, 2560, 12));
		return s;
	});

def("39-cache-write-1h-and-reasoning.jsonl",
	"Usage with cacheWrite1h (a subset of cacheWrite, priced 2x input, never added again) and reasoning (inside output).",
	["status", "stats.tokens", "stats.cost", "usageBreakdown", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Think hard about this.");
		s.asst(M.opus, [think("Let me reason step by step."), text("Done.")], usage(M.opus, 120, 800, 0, 5000, { cacheWrite1h: 2000, reasoning: 300 }));
		s.user("Again.");
		s.asst(M.opus, [text("Done again.")], usage(M.opus, 60, 200, 5000, 1000, { cacheWrite1h: 1000, reasoning: 0 }));
		return s;
	});

def("40-usage-missing-total-tokens.jsonl",
	"The last assistant's usage has no totalTokens: the estimate uses input+output+cacheRead+cacheWrite instead.",
	["status", "stats.tokens", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Hi.", "Hello.");
		s.user("Old provider?");
		s.asst(M.codex, [text("No totals reported.")], usage(M.codex, 1500, 20, 700, 0, { totalTokens: null }));
		s.user("Trailing question.");
		return s;
	});

def("41-usage-total-tokens-zero.jsonl",
	"The last assistant's totalTokens is 0 while its token fields are not: the estimate falls back to the sum of the four fields.",
	["status", "stats.tokens", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Hi.");
		s.asst(M.gemini, [text("Hello.")], usage(M.gemini, 1800, 25, 600, 0, { totalTokens: 0 }));
		return s;
	});

def("42-usage-total-tokens-differs-from-sum.jsonl",
	"totalTokens (3000) differs from input+output+cacheRead+cacheWrite (2100): the estimate uses totalTokens, the totals use the four fields.",
	["status", "stats.tokens", "usageBreakdown", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Hi.");
		s.asst(M.gemini, [text("Hello.")], usage(M.gemini, 1800, 100, 200, 0, { totalTokens: 3000 }));
		return s;
	});

def("43-cost-float-summation.jsonl",
	"Costs with many decimals from several models and a usage entry: JS doubles summed in file order (opus 0.2+0.1 = 0.30000000000000004, codex 0.2+4e-17 = 0.20000000000000004, session 0.9174333000000001); breakdown sorted by cost descending.",
	["status", "stats.cost", "usageBreakdown", "usageBySource"],
	(rel) => {
		const s = new Session(rel);
		s.user("q1");
		s.asst(M.sonnet, [text("a1")], usageCost(100, 10, 0, 0, [0.1, 0, 0, 0]));
		s.user("q2");
		s.asst(M.codex, [text("a2")], usageCost(100, 10, 0, 0, [0.2, 0, 0, 0]));
		s.user("q3");
		s.asst(M.sonnet, [text("a3")], usageCost(100, 10, 0, 0, [0.3, 0, 0, 0]));
		s.user("q4");
		s.asst(M.gemini, [text("a4")], usageCost(2775, 141, 0, 0, [0.013875000000000002, 0.0035250000000000004, 0, 0]));
		s.usageEntry("cache_warm", M.haiku, usageCost(0, 0, 333, 0, [0, 0, 0.0000333, 0]));
		s.user("q5");
		s.asst(M.codex, [text("a5")], usageCost(7, 3, 0, 0, [1e-17, 3e-17, 0, 0]));
		s.user("q6");
		s.asst(M.opus, [text("a6")], usageCost(100, 10, 0, 0, [0.2, 0.1, 0, 0]));
		return s;
	});

def("44-zero-usage-assistant.jsonl",
	"The last assistant has all-zero usage (e.g. a local command answered without a model): skipped by the estimate (the previous usage + chars/4 after it is used), and dropped from the breakdown (zero cost and tokens).",
	["status", "usageBreakdown", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Real question.", "Real answer.", M.sonnet, usage(M.sonnet, 2000, 30));
		s.user("/mode");
		s.asst(M.codex, [], ZERO());
		return s;
	});

def("45-aborted-and-error-assistants.jsonl",
	"An aborted and an error assistant, both with usage: counted in the totals, skipped by the estimate (which uses the earlier stop answer + chars/4 of everything after it).",
	["status", "stats", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Start.", "Started.", M.sonnet, usage(M.sonnet, 2000, 10));
		s.user("Long task.");
		s.asst(M.sonnet, [text("Working on it, step 1 of")], usage(M.sonnet, 2050, 300), { stopReason: "aborted" });
		s.user("Retry.");
		s.asst(M.sonnet, [], usage(M.sonnet, 2400, 0), { stopReason: "error", errorMessage: "529 overloaded_error: Overloaded" });
		return s;
	});

def("46-usage-missing-token-fields.jsonl",
	"An old-style usage without cacheRead/cacheWrite: Pi's addUsageToTotals adds undefined, so those totals become NaN (printed null by JSON.stringify) — SPEC says a missing number is 0; Pi's code gives NaN.",
	["status", "stats.tokens", "stats.cost", "usageBreakdown", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Old file.");
		s.asst(M.sonnet, [text("Old usage shape.")], { input: 1500, output: 40, totalTokens: 1540, cost: { input: 0.0045, output: 0.0006, total: 0.0051 } });
		return s;
	});

// ===== §4 projection =========================================================================
const SYS0 = {
	content: "",
	sections: { preamble: "You are pi, an expert coding assistant.", tools: "<tools>\n- read\n- bash\n</tools>", cwd: `Current directory: ${CWD}` },
	toolsAdded: [T_READ, T_BASH],
};

def("47-compaction-with-system-message.jsonl",
	"A compaction carrying a `systemMessage` checkpoint; system messages inside the kept range are dropped, the checkpoint leads the context; an answer with usage after the compaction is trusted by the estimate.",
	["status", "contextEntryTypes", "projectedRoles", "compactions", "estimate", "contextUsageTokens", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		s.sys(SYS0);
		s.user("Read main.rs.");
		s.asst(M.sonnet, [call("toolu_01A", "read", { path: "src/main.rs" })], usage(M.sonnet, 3000, 40, 0, 3000));
		s.tool("toolu_01A", "read", [text("fn main() {}\n")]);
		s.asst(M.sonnet, [text("It is empty.")], usage(M.sonnet, 20, 10, 6040, 0));
		const keep = s.user("Add logging.");
		s.sys({ content: "", sections: { skills: "<skills>\n- logging\n</skills>" }, toolsRemoved: [{ name: "bash" }] });
		s.asst(M.sonnet, [text("Logging added.")], usage(M.sonnet, 300, 50, 6100, 0));
		s.compaction({
			summary: "## Goal\nAdd logging to main.rs.\n## Done\nRead main.rs; added logging.",
			firstKeptEntryId: keep,
			tokensBefore: 6450,
			systemMessage: { role: "system", content: "", sections: { ...SYS0.sections, skills: "<skills>\n- logging\n</skills>" }, toolsAdded: [T_READ] },
		});
		s.user("Now run it.");
		s.asst(M.sonnet, [text("It runs.")], usage(M.sonnet, 800, 8, 1500, 0));
		return s;
	});

def("48-compaction-without-system-message-with-usage.jsonl",
	"An older-style compaction without systemMessage that carries the summary call's usage (counted under \"Tools/summaries\"); the leaf is a user message after it, so no usage is trusted (chars/4) and contextUsageTokens is null.",
	["status", "usageBySource.compaction", "usageBreakdown", "projectedRoles", "compactions", "estimate", "contextUsageTokens", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Explain the build.", "It uses cargo.", M.sonnet, usage(M.sonnet, 4000, 20));
		const keep = s.user("And the tests?");
		s.asst(M.sonnet, [text("cargo test.")], usage(M.sonnet, 4030, 6));
		s.compaction({ summary: "The build uses cargo.", firstKeptEntryId: keep, tokensBefore: 4036, usage: usage(M.haiku, 4100, 180) });
		s.user("Thanks, next topic.");
		return s;
	});

def("49-compaction-retain-none.jsonl",
	"A retain-none compaction (firstKeptEntryId = its own id): nothing before it is kept.",
	["status", "contextEntryCount", "projectedRoles", "compactions", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		s.turn("One.", "One.", M.sonnet, usage(M.sonnet, 1000, 5));
		s.turn("Two.", "Two.", M.sonnet, usage(M.sonnet, 1010, 5));
		const cid = s.newId();
		s.idn--; // the compaction takes this id
		s.compaction({ summary: "Counted to two.", firstKeptEntryId: cid, tokensBefore: 1015 });
		s.turn("Three.", "Three.", M.sonnet, usage(M.sonnet, 60, 5));
		return s;
	});

def("50-compaction-first-kept-off-path.jsonl",
	"firstKeptEntryId names an entry on an abandoned branch (not on the path): nothing before the compaction is kept, like retain-none.",
	["status", "offPathEntries", "contextEntryCount", "compactions", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("Base.", "Base.", M.sonnet, usage(M.sonnet, 1000, 5));
		const other = s.user("Abandoned branch.");
		s.asst(M.sonnet, [text("Abandoned.")], usage(M.sonnet, 1010, 5));
		s.branch(a1);
		s.turn("Main branch.", "Main.", M.sonnet, usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Base and main.", firstKeptEntryId: other, tokensBefore: 1015 });
		s.user("After.");
		return s;
	});

def("51-two-compactions-older-in-kept-range.jsonl",
	"Two compactions; the newer one keeps a range that contains the older one: the older stays a context entry but projects no message (one compactionSummary only).",
	["status", "contextEntryTypes", "projectedRoles", "compactions", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const keep = s.user("q2");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "First summary.", firstKeptEntryId: keep, tokensBefore: 1015 });
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 120, 5));
		s.turn("q4", "a4", M.sonnet, usage(M.sonnet, 130, 5));
		s.compaction({ summary: "Second summary.", firstKeptEntryId: keep, tokensBefore: 135 });
		s.turn("q5", "a5", M.sonnet, usage(M.sonnet, 150, 5));
		return s;
	});

def("52-compaction-off-active-path.jsonl",
	"A compaction on an abandoned branch: counted in compactions.total, not on the path; its own effect is still computed with it as the leaf.",
	["status", "compactions", "contextEntryCount", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("Base.", "Base.", M.sonnet, usage(M.sonnet, 1000, 5));
		const keep = s.user("Branch A.");
		s.asst(M.sonnet, [text("A.")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Base and A.", firstKeptEntryId: keep, tokensBefore: 1015, usage: usage(M.haiku, 1100, 40) });
		s.branch(a1);
		s.turn("Branch B.", "B.", M.sonnet, usage(M.sonnet, 1010, 5));
		return s;
	});

def("53-compaction-id-reused-by-later-entry.jsonl",
	"A later entry reuses a compaction's id: Pi's index resolves the id to the later entry (a user message), so the compaction is reachable from no walk and its \"effect\" is computed for that user message (path 3, estimatedTokensAfter uses the earlier answer's usage: 1012).",
	["status", "entryCount", "compactions", "activePathLength", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const keep = s.user("q2");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Summary.", firstKeptEntryId: keep, tokensBefore: 1015 }, { id: "c0c0c0c0" });
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 60, 5));
		s.user("Reuses the compaction id.", { id: "c0c0c0c0", parentId: a1 });
		s.asst(M.sonnet, [text("a4")], usage(M.sonnet, 1020, 5));
		return s;
	});

def("54-compaction-then-omitted-assistant.jsonl",
	"After a compaction, the only answer with usage is omitted by a context_edit: the estimate falls back to chars/4 and contextUsageTokens is null (no projected usable assistant after the compaction).",
	["status", "contextEdits", "projectedRoles", "estimate", "contextUsageTokens"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const keep = s.user("q2");
		s.asst(M.sonnet, [text("a2 is kept")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Summary.", firstKeptEntryId: keep, tokensBefore: 1015 });
		s.user("q3");
		const a3 = s.asst(M.sonnet, [text("a3 will be omitted")], usage(M.sonnet, 80, 5));
		s.edit(a3, null);
		return s;
	});

def("55-context-edit-null-on-user.jsonl",
	"`replacement: null` on a user message removes it from the projection; a later answer with usage is still trusted.",
	["status", "contextEdits", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const u2 = s.user("Here is a huge paste: " + "x".repeat(400));
		s.asst(M.sonnet, [text("That was long.")], usage(M.sonnet, 1120, 5));
		s.edit(u2, null);
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 1020, 5));
		return s;
	});

def("56-context-edit-string-on-assistant-and-tool-result.jsonl",
	"String replacements (as written by hand or older code) on an assistant (its tool call disappears) and on a toolResult become one text block each; the edits come after the last usage, so the estimate is chars/4.",
	["status", "contextEdits", "projectedRoles", "estimate", "stats.toolCalls"],
	(rel) => {
		const s = new Session(rel);
		s.user("Read the big file.");
		const a1 = s.asst(M.sonnet, [text("Reading."), call("toolu_01Big", "read", { path: "data/big.csv" })], usage(M.sonnet, 1500, 30));
		const t1 = s.tool("toolu_01Big", "read", [text("a,b,c\n".repeat(200))]);
		s.asst(M.sonnet, [text("The file has 200 rows.")], usage(M.sonnet, 1850, 10));
		s.edit(t1, { content: "[200 rows elided]" });
		s.edit(a1, { content: "(read data/big.csv)" });
		return s;
	});

def("57-context-edit-array-on-user.jsonl",
	"An array replacement (text + image) on a user message replaces its content; estimated with the image as 4,800 chars.",
	["status", "contextEdits", "estimate"],
	(rel) => {
		const s = new Session(rel);
		const u1 = s.user("Describe the screenshot I will paste.");
		s.asst(M.sonnet, [text("Please paste it.")], usage(M.sonnet, 1000, 5));
		s.edit(u1, { content: [text("Describe this screenshot:"), img()] });
		return s;
	});

def("58-context-edit-on-custom-message.jsonl",
	"A replacement on a custom_message (string replaces the array content, no text-block normalisation for custom).",
	["status", "contextEdits", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const cm = s.customMsg("git-status", [text("M src/main.rs\nM src/lib.rs\n?? notes.txt\n".repeat(10))], true, { files: 3 });
		s.edit(cm, { content: "git status: 3 files" });
		return s;
	});

def("59-context-edit-latest-wins.jsonl",
	"Three edits of one target (replace, null, replace): the latest edit wins (replaced, not omitted).",
	["status", "contextEdits", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const u2 = s.user("Original question two, fairly long to make the difference visible.");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1020, 5));
		s.edit(u2, { content: "first edit" });
		s.edit(u2, null);
		s.edit(u2, { content: "final" });
		return s;
	});

def("60-context-edit-on-abandoned-branch.jsonl",
	"A context_edit on an abandoned branch: not on the path, not applied, and it does not invalidate the usage on the active branch.",
	["status", "contextEdits", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const u2 = s.user("q2");
		const a2 = s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1010, 5));
		s.edit(u2, null);
		s.branch(a2);
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 1020, 5));
		return s;
	});

def("61-context-edit-target-compacted-away.jsonl",
	"A context_edit after a compaction targets an entry the compaction summarised away: nothing to apply, but the edit still comes after the last usage, so the estimate falls back to chars/4.",
	["status", "contextEdits", "projectedMessageCount", "estimate", "contextUsageTokens"],
	(rel) => {
		const s = new Session(rel);
		const [u1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const keep = s.user("q2");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Summary of q1.", firstKeptEntryId: keep, tokensBefore: 1015 });
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 90, 5));
		s.edit(u1, null);
		return s;
	});

def("62-context-edit-target-missing.jsonl",
	"A context_edit whose targetId names no entry: nothing applied, yet it switches the estimate to chars/4 because it comes after the last usage.",
	["status", "contextEdits", "estimate", "contextUsageTokens"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.edit("f00df00d", { content: "nothing to replace" });
		return s;
	});

def("63-context-edit-summarized-away.jsonl",
	"A (hand-made) context_edit written before its target, then summarised away by a compaction that keeps the target: edits are only taken from the context entries, so the target is not edited.",
	["status", "contextEdits", "contextEntryTypes", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const futureId = sha(`${rel}:${s.idn + 1}`).slice(0, 8); // the id the next user message gets
		s.edit(futureId, { content: "edited by an edit that precedes its target" });
		const keep = s.user("q2 (kept, not edited)");
		if (keep !== futureId) throw new Error("63: id prediction failed");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 1010, 5));
		s.compaction({ summary: "Summary.", firstKeptEntryId: keep, tokensBefore: 1015 });
		s.user("q3");
		return s;
	});

def("64-context-edit-null-on-compaction.jsonl",
	"`replacement: null` targeting the compaction removes both its systemMessage checkpoint and its summary from the projection.",
	["status", "contextEdits", "projectedRoles", "estimate", "compactionEffects"],
	(rel) => {
		const s = new Session(rel);
		s.sys(SYS0);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 3000, 5));
		const keep = s.user("q2");
		s.asst(M.sonnet, [text("a2")], usage(M.sonnet, 3010, 5));
		const cid = s.compaction({ summary: "A summary that will be edited away.", firstKeptEntryId: keep, tokensBefore: 3015, systemMessage: { role: "system", ...SYS0 } });
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 3100, 5));
		s.edit(cid, null);
		return s;
	});

def("65-branch-summary-empty-and-nonempty.jsonl",
	"Two branch switches on the path: a branch_summary with an empty summary projects nothing; one with a summary (and the summary call's usage, counted under \"Tools/summaries\") projects a branchSummary message.",
	["status", "entryCounts", "offPathEntries", "projectedRoles", "usageBySource.branchSummary", "usageBreakdown", "estimate"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.user("Try approach A.");
		const aA = s.asst(M.sonnet, [text("A failed.")], usage(M.sonnet, 1010, 5));
		s.branchSummary(a1, aA, "", undefined);
		const [, a3] = s.turn("Try approach B.", "B works so far.", M.sonnet, usage(M.sonnet, 1010, 5));
		s.user("Try B with caching.");
		const aC = s.asst(M.sonnet, [text("Caching broke B.")], usage(M.sonnet, 1030, 5));
		s.branchSummary(a3, aC, "Tried adding caching to B; it broke the tests.", usage(M.haiku, 900, 40));
		s.turn("Continue B without caching.", "Done.", M.sonnet, usage(M.sonnet, 1100, 5));
		return s;
	});

def("66-branch-summary-from-root.jsonl",
	"A branch_summary written with no leaf (`branchWithSummary` after resetLeaf): parentId null and fromId \"root\"; a second tree root whose summary leads the context.",
	["status", "treeRoots", "activePathLength", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Old start.", "Old answer.", M.sonnet, usage(M.sonnet, 1000, 5));
		s.branchSummary(null, "root", "Restarted from scratch after an unproductive first attempt.", undefined);
		s.turn("Fresh start.", "Fresh answer.", M.sonnet, usage(M.sonnet, 1040, 5));
		return s;
	});

def("67-model-change-then-assistant.jsonl",
	"A virtual model (router/auto) selected with model_change, then answers by the physical model: the projection's model is the last assistant's provider/model, not the virtual one; thinking level from thinking_level_change.",
	["status", "model", "thinkingLevel", "usageBreakdown", "entryCounts"],
	(rel) => {
		const s = new Session(rel);
		s.modelChange("router", "auto");
		s.thinking("low");
		s.user("Quick question.");
		s.custom("pi.virtual-model-state", { provider: "router", modelId: "auto", state: { turns: 1 } });
		s.asst(M.haiku, [text("Quick answer.")], usage(M.haiku, 900, 10));
		return s;
	});

def("68-settings-from-full-path.jsonl",
	"Settings come from the full active path: a model_change and a thinking_level_change that a compaction summarised away still apply (model_change after the last assistant wins); a thinking change on an abandoned branch does not.",
	["status", "model", "thinkingLevel", "contextEntryTypes", "offPathEntries"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.thinking("xhigh");
		s.user("Abandoned.");
		s.branch(a1);
		s.modelChange("openai", "gpt-5.1-codex");
		s.thinking("high");
		const keep = s.user("q2");
		s.compaction({ summary: "Summary.", firstKeptEntryId: keep, tokensBefore: 1010 });
		s.user("q3");
		return s;
	});

def("69-custom-and-custom-message.jsonl",
	"A `custom` entry (extension state: no context) and custom_message entries with string content and with array content holding an image (4,800 chars), trailing after the last usage.",
	["status", "entryCounts", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.custom("todo-ext", { items: ["parse", "test"], done: 1 });
		s.customMsg("reminder", "Remember to run the tests before committing.", true);
		s.customMsg("screenshot", [text("Current UI:"), img()], false, { width: 800, height: 600 });
		return s;
	});

def("70-label-set-and-clear.jsonl",
	"A label set on an entry, then cleared (label omitted): no effect on context or totals.",
	["status", "entryCounts", "activePathLength", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		const [u1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.label(u1, "checkpoint-1");
		s.label(u1, undefined);
		s.turn("q2", "a2", M.sonnet, usage(M.sonnet, 1010, 5));
		return s;
	});

def("71-session-info-renamed.jsonl",
	"session_info names: set, then renamed on an abandoned branch with surrounding spaces: the name is the latest in FILE order (path does not matter), trimmed.",
	["status", "name", "entryCounts", "offPathEntries"],
	(rel) => {
		const s = new Session(rel);
		const [, a1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.info("Refactor parser");
		const [, a2] = s.turn("q2", "a2", M.sonnet, usage(M.sonnet, 1010, 5));
		s.branch(a1);
		s.info("  Parser refactor (v2)  ");
		s.branch(a2);
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 1020, 5));
		return s;
	});

def("72-session-info-empty-clears.jsonl",
	"A later session_info with an empty name clears the name (null).",
	["status", "name", "entryCounts"],
	(rel) => {
		const s = new Session(rel);
		s.info("Named session");
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.info("");
		return s;
	});

def("73-bash-execution.jsonl",
	"bashExecution messages (one with excludeFromContext: true) are projected and estimated as command + output, trailing after the last usage.",
	["status", "messageCounts", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.bash("ls -la", "total 8\ndrwxr-xr-x  3 dev dev 4096 .\n-rw-r--r--  1 dev dev  120 Cargo.toml\n");
		s.bash("cat .env", "SECRET=redacted\n", { excludeFromContext: true });
		return s;
	});

def("74-null-content-messages.jsonl",
	"Messages with `content: null` (system, user, assistant, toolResult) and a custom_message without content: Pi projects them as \"\" / [] (no crash) and they estimate 0.",
	["status", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.sys({ content: null, sections: { preamble: "Short." } });
		s.user(null);
		s.asst(M.sonnet, null, usage(M.sonnet, 900, 3));
		s.tool("toolu_01Null", "read", null);
		s.customMsg("empty-ext", undefined, true);
		s.user("Last.");
		return s;
	});

// ===== §5 estimate ===========================================================================
def("75-estimate-trailing-after-usage.jsonl",
	"Usage of the last good answer plus chars/4 (rounded up per message) of the messages after it: toolResult, a system message (sections incl. a null one, toolsAdded), a custom_message and a user message.",
	["status", "projectedRoles", "estimate", "contextUsageTokens"],
	(rel) => {
		const s = new Session(rel);
		s.sys(SYS0);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 3000, 5));
		s.user("Run ls.");
		s.asst(M.sonnet, [call("toolu_01Ls", "bash", { command: "ls" })], usage(M.sonnet, 3020, 15, 0, 0));
		s.tool("toolu_01Ls", "bash", [text("Cargo.toml\nsrc\n")]);
		s.sys({ content: "Prefer short answers.", sections: { cwd: null, skills: "<skills>none</skills>" }, toolsAdded: [T_EDIT] });
		s.customMsg("hint", "The user likes tables.", true);
		s.user("What next?");
		return s;
	});

def("76-estimate-system-replay-after-edit.jsonl",
	"An edit after the last usage: chars/4 over all projected messages with every system message replayed into one (content appended, sections patched by name, a null section removed, toolsRemoved, a tool re-declared).",
	["status", "projectedRoles", "contextEdits", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.sys({ content: "You are pi.", sections: SYS0.sections, toolsAdded: [T_READ, T_BASH, T_EDIT] });
		const [u1] = s.turn("Please read every file in the repository and summarise each one in detail.", "OK.", M.sonnet, usage(M.sonnet, 3000, 5));
		s.sys({ content: "", sections: { skills: "<skills>\n- rust\n</skills>", cwd: null }, toolsRemoved: [{ name: "bash" }] });
		s.turn("q2", "a2", M.sonnet, usage(M.sonnet, 3100, 5));
		s.sys({ content: "Always answer in English.", sections: { preamble: "You are pi, v2." }, toolsAdded: [T_WRITE, T_READ2] });
		s.turn("q3", "a3", M.sonnet, usage(M.sonnet, 3300, 5));
		s.edit(u1, { content: "Summarise the repository." });
		return s;
	});

def("77-estimate-unicode-lengths.jsonl",
	"Character counts are UTF-16 code units: é precomposed 1, e+combining acute 2, emoji 2, skin-tone/ZWJ family/flag sequences 4/11/4, CJK 1, supplementary CJK 2; no usage at all, so everything is chars/4.",
	["status", "projectedMessageCount", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("héllo wörld é"); // 13 units
		s.user("cafe\u0301 vs caf\u00e9"); // 13 units
		s.user("😀"); // 2
		s.user("👍🏽👨‍👩‍👧‍👦🇫🇷"); // 4 + 11 + 4 = 19
		s.user("中文字符テスト한국어"); // 10
		s.user("𠀀𠀁𪚥"); // 6
		s.user([text("mixed: ß→ü "), text("😀中")]); // 11 + 3
		return s;
	});

def("78-estimate-image-blocks.jsonl",
	"Image blocks count 4,800 chars each, in user content (with text), toolResult content and a user message with only an image, trailing after the last usage.",
	["status", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user([text("What is in this picture?"), img()]);
		s.asst(M.sonnet, [call("toolu_01Img", "read", { path: "shot.png" })], usage(M.sonnet, 2600, 20));
		s.tool("toolu_01Img", "read", [text("Read image file [image/png]"), img()]);
		s.user([img()]);
		return s;
	});

def("79-estimate-tool-call-arguments.jsonl",
	"A tool call with nested arguments holding non-ASCII, quotes, backslashes, newlines/tabs, control chars (\\u0001), U+2028 (raw in JSON.stringify), a lone surrogate, numbers and null: counted as name.length + JSON.stringify(arguments).length (= the raw JSON text as written). The call was aborted, so it trails the last usage.",
	["status", "stats.toolCalls", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Fix the file.", "Looking.", M.sonnet, usage(M.sonnet, 2000, 5));
		s.user("Go.");
		s.asst(M.sonnet, [
			text("Editing."),
			call("toolu_01Edit", "edit", {
				path: "src/ünïcödé/路径.rs",
				edits: [{ oldText: 'let s = "quoted";\n\tindent', newText: "naïve → 😀 中 \u2028 end" }],
				options: { dryRun: false, count: 3, ratio: 0.5, big: 12345678901234, neg: -1.5e-7, nested: { deep: [1, [2, [3, { k: null }]]] } },
				ctl: "\u0001\u001f\u007f",
				backslash: "C:\\Users\\dev",
				lone: "\udc00",
			}),
		], usage(M.sonnet, 2050, 120), { stopReason: "aborted" });
		return s;
	});

def("80-estimate-thinking-blocks.jsonl",
	"Thinking blocks count their `thinking` text (signatures do not count; a redacted block with empty thinking counts 0), trailing after the last usage.",
	["status", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("Solve it.");
		s.asst(M.opus, [think("First, consider the constraints.", "sig-AAAA"), text("Solved.")], usage(M.opus, 2000, 150, 0, 0, { reasoning: 60 }));
		s.user("Explain more.");
		s.asst(M.opus, [think("The user wants more detail; expand on step two.", "sig-BBBB"), { type: "thinking", thinking: "", thinkingSignature: "EncryptedPayload==", redacted: true }, text("Step two is")], usage(M.opus, 2200, 90), { stopReason: "aborted" });
		return s;
	});

def("81-estimate-system-message-no-timestamp.jsonl",
	"When falling back to chars/4, a system message without timestamp and without tools replays to nothing (getCurrentSystemMessage returns undefined): its text counts 0.",
	["status", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.sys({ content: "Be terse. Answer in one line.", sections: { style: "No markdown headings." } }, undefined, { noTimestamp: true });
		const [u1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.edit(u1, { content: "q1 (edited)" });
		return s;
	});

def("82-estimate-system-no-timestamp-with-tools.jsonl",
	"Same fallback, but the timestamp-less system message declares a tool: it is replayed (timestamp 0) and counts content + sections + JSON.stringify(toolsAdded).",
	["status", "projectedRoles", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.sys({ content: "Be terse. Answer in one line.", sections: { style: "No markdown headings." }, toolsAdded: [T_READ] }, undefined, { noTimestamp: true });
		const [u1] = s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		s.edit(u1, { content: "q1 (edited)" });
		return s;
	});

def("83-estimate-per-message-rounding.jsonl",
	"chars/4 is rounded up per message: five 1-char messages after the last usage add 5 tokens, not ceil(5/4) = 2.",
	["status", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q", "a", M.sonnet, usage(M.sonnet, 1000, 5));
		for (const c of ["a", "b", "c", "d", "e"]) s.user(c);
		return s;
	});

def("84-noncanonical-json-not-pi-written.jsonl",
	"NOT Pi-written: tool-call arguments and a system message's toolsAdded written with spaces, \\u00e9 / \\/ / an escaped surrogate pair, 1.0 and 1E2 and a duplicate key. Pi counts JSON.stringify of the PARSED value (é, /, the emoji raw, 1, 100, last duplicate only), which differs from the raw text length: arguments 131 raw chars vs 88 re-serialised, toolsAdded 136 vs 119, so trailing 54 tokens (raw lengths would give 68).",
	["status", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.turn("q1", "a1", M.sonnet, usage(M.sonnet, 1000, 5));
		const args = '{ "path" : "caf\\u00e9.txt", "url": "https:\\/\\/example.com\\/a", "n": 1.0, "m": 1E2, "emoji": "\\ud83d\\ude00", "k": {"a": 1, "a": 2} }';
		const msg = JSON.stringify({ type: "message", id: s.newId(), parentId: s.leaf, timestamp: iso(s.tick()), message: { role: "assistant", content: [{ type: "toolCall", id: "toolu_01Odd", name: "fetch", arguments: "@ARGS@" }], api: M.sonnet.api, provider: M.sonnet.provider, model: M.sonnet.model, usage: usage(M.sonnet, 1010, 40), stopReason: "aborted", timestamp: s.ms - 3 } });
		s.raw(msg.replace('"@ARGS@"', args), true);
		s.leaf = JSON.parse(msg).id;
		const tools = '[ { "name" : "fetch", "description" : "Fetch a URL \\u2014 politely.", "parameters" : {"type":"object","properties":{},"required":[]} } ]';
		const sys = JSON.stringify({ type: "message", id: s.newId(), parentId: s.leaf, timestamp: iso(s.tick()), message: { role: "system", content: "", toolsAdded: "@TOOLS@", timestamp: s.ms - 9 } });
		s.raw(sys.replace('"@TOOLS@"', tools), true);
		s.leaf = JSON.parse(sys).id;
		return s;
	});

def("85-duplicate-json-keys-not-pi-written.jsonl",
	"NOT Pi-written: duplicate keys in one object; JSON.parse keeps the LAST value (usage input 2000 not 1000; parentId the real parent, not the bogus first one).",
	["status", "stats.tokens", "activePathLength", "estimate"],
	(rel) => {
		const s = new Session(rel);
		s.user("q1");
		const u = usage(M.sonnet, 2000, 5);
		const line = JSON.stringify({ type: "message", id: s.newId(), parentId: "@PARENT@", timestamp: iso(s.tick()), message: { role: "assistant", content: [text("a1")], api: M.sonnet.api, provider: M.sonnet.provider, model: M.sonnet.model, usage: u, stopReason: "stop", timestamp: s.ms - 3 } });
		const fixed = line
			.replace('"parentId":"@PARENT@"', `"parentId":"nosuchid","parentId":${JSON.stringify(s.leaf)}`)
			.replace('"usage":{"input":2000', '"usage":{"input":1000,"input":2000');
		s.raw(fixed, true);
		s.leaf = JSON.parse(line).id;
		s.user("q2");
		return s;
	});

// ===== §3 forks ==============================================================================
const FORK_SOURCE = "forks/86-fork-source.jsonl";
def(FORK_SOURCE,
	"Fork source: a plain v3 session with billed answers.",
	["status", "stats.tokens", "stats.cost", "entryCount"],
	(rel) => {
		const s = new Session(rel);
		s.turn("Plan the release.", "Steps: bump, tag, publish.", M.sonnet, usage(M.sonnet, 2000, 30));
		s.turn("Bump the version.", "Bumped to 1.2.0.", M.sonnet, usage(M.sonnet, 50, 12, 2030, 0));
		return s;
	});

/** Pi's forkFrom: new v3 header with parentSession, then every non-header line of the source verbatim. */
function forkOf(rel, srcRel, built, opts = {}) {
	const src = built.get(srcRel);
	const s = new Session(rel, null);
	const header = s.header3(opts.noParent ? {} : { parentSession: opts.parentSession ?? `${SESSION_DIR}/${path.basename(srcRel)}` });
	if (opts.cwd) header.cwd = opts.cwd;
	s.line(header);
	const srcParts = src.parts.slice(1);
	for (const p of srcParts) s.raw(p, true);
	s.ms = Math.max(s.ms, src.ms);
	s.leaf = src.leaf;
	s.v1src = src.v1;
	return s;
}

def("forks/87-fork.jsonl",
	"A /fork of 86: header with parentSession, a verbatim copy of 86's entries (same ids, timestamps, usage), then new entries.",
	["status", "parentSession", "parentInCorpus", "entryCount", "stats.tokens", "stats.cost"],
	(rel, built) => {
		const s = forkOf(rel, FORK_SOURCE, built);
		s.turn("Tag it.", "Tagged v1.2.0.", M.sonnet, usage(M.sonnet, 40, 8, 2050, 0));
		return s;
	});

def("forks/88-fork-of-fork.jsonl",
	"A fork of the fork 87: copies 86's entries a second time (via 87) plus 87's own.",
	["status", "parentInCorpus", "entryCount", "stats.tokens", "stats.cost"],
	(rel, built) => {
		const s = forkOf(rel, "forks/87-fork.jsonl", built);
		s.turn("Publish.", "Published.", M.sonnet, usage(M.sonnet, 30, 4, 2070, 0));
		return s;
	});

def("forks/89-copy-without-parent-session.jsonl",
	"An extension-made copy of 86 whose header has NO parentSession: the copied records are the same and must still be counted once.",
	["status", "parentSession", "entryCount", "stats.tokens", "stats.cost"],
	(rel, built) => {
		const s = forkOf(rel, FORK_SOURCE, built, { noParent: true, cwd: "/home/dev/work/pisa-edge-copy" });
		s.turn("Write the changelog.", "Changelog written.", M.haiku, usage(M.haiku, 2100, 60));
		return s;
	});

def("forks/90-fork-of-missing-parent.jsonl",
	"A fork whose parentSession file is not in the corpus (deleted): parentInCorpus null; its copied prefix can only be matched by content.",
	["status", "parentSession", "parentInCorpus", "entryCount", "stats.cost"],
	(rel) => {
		const s = new Session(rel, null);
		s.line(s.header3({ parentSession: `${SESSION_DIR}/2026-03-01T08-00-00-000Z_019ca000-0000-7000-8000-000000000000.jsonl` }));
		s.turn("(copied) Old question.", "(copied) Old answer.", M.sonnet, usage(M.sonnet, 1500, 20));
		s.turn("New question.", "New answer.", M.sonnet, usage(M.sonnet, 40, 10, 1520, 0));
		return s;
	});

const V1_SOURCE = "forks/91-v1-fork-source.jsonl";
def(V1_SOURCE,
	"A v1 fork source (no ids): Pi migrates it in memory and gives its entries ids.",
	["status", "migratedFrom", "entryCount", "activePathLength", "stats.tokens", "stats.cost"],
	(rel) => {
		const s = new Session(rel, v1Header(rel, { post: { provider: "anthropic", modelId: "claude-sonnet-4-5", thinkingLevel: "off" } }), { v1: true });
		s.user([text("Old v1 question.")]);
		s.asst(M.sonnet, [text("Old v1 answer.")], usage(M.sonnet, 1800, 25));
		s.user([text("Second v1 question.")]);
		s.asst(M.sonnet, [text("Second v1 answer.")], usage(M.sonnet, 1850, 20));
		return s;
	});

def("forks/92-v1-fork-from.jsonl",
	"`forkFrom` of the v1 file 91: a v3 header over the raw id-less v1 lines; the first new entry has no parentId. Reloaded, only the new entries are on the path (the copies stay in the totals).",
	["status", "version", "migratedFrom", "parentInCorpus", "entryCount", "leafIndex", "activePathLength", "offPathEntries", "treeRoots", "stats.tokens", "stats.cost", "estimate"],
	(rel, built) => {
		const s = forkOf(rel, V1_SOURCE, built);
		s.leaf = undefined; // Pi's leafId after loading id-less entries: undefined -> parentId omitted
		s.user("New question after the fork.");
		s.asst(M.sonnet, [text("New answer.")], usage(M.sonnet, 300, 10, 1870, 0));
		return s;
	});

// ---- write ------------------------------------------------------------------------------------
function buildAll() {
	const built = new Map();
	const out = [];
	for (const f of FILES) {
		const r = f.build(f.rel, built);
		if (r instanceof Session) built.set(f.rel, r);
		out.push({ rel: f.rel, buf: r instanceof Session ? r.buffer() : r });
	}
	return out;
}

function writeAll() {
	const out = buildAll();
	const wanted = new Set(out.map((o) => o.rel));
	for (const sub of ["", "forks"]) {
		const d = path.join(DIR, sub);
		if (!fs.existsSync(d)) continue;
		for (const name of fs.readdirSync(d)) {
			const rel = sub ? `${sub}/${name}` : name;
			if (/^\d\d-.*\.jsonl$/.test(name) && !wanted.has(rel)) fs.rmSync(path.join(d, name));
		}
	}
	for (const { rel, buf } of out) {
		fs.mkdirSync(path.dirname(path.join(DIR, rel)), { recursive: true });
		fs.writeFileSync(path.join(DIR, rel), buf);
	}
	process.stderr.write(`make-edge: wrote ${out.length} files\n`);
}

// ---- README from the oracle output ----------------------------------------------------------
function pick(rec, key) {
	let v = rec;
	for (const part of key.split(".")) {
		if (v === undefined || v === null) return undefined;
		v = v[part];
	}
	return v;
}
function cell(s) {
	return s.replace(/\|/g, "\\|").replace(/\n/g, " ");
}
function writeReadme(oraclePath) {
	const recs = new Map();
	for (const line of fs.readFileSync(oraclePath, "utf8").split("\n")) if (line.trim()) {
		const r = JSON.parse(line);
		recs.set(r.path, r);
	}
	const rows = FILES.map((f) => {
		const r = recs.get(f.rel);
		const shown = !r ? "(missing from oracle output)" : f.keys.map((k) => `\`${k}=${JSON.stringify(pick(r, k) ?? null)}\``).join(" ");
		return `| \`${f.rel}\` | ${cell(f.behaviour)} | ${cell(shown)} |`;
	});
	const text = `# Edge-case session files

Small hand-made Pi session files, one behaviour each, for the differential test (pisa vs
\`tests/oracle/oracle.mjs\`, which runs Pi's own code). They cover the session-format rules of Pi 1.6.0 and the oracle README's "Known Pi
behaviours". Generated by \`make-edge.mjs\` (run \`node make-edge.mjs\`; it rewrites the files byte for
byte); \`node make-edge.mjs --oracle\` runs the oracle over a temporary copy of the set, writes
\`oracle.expected.ndjson\` and regenerates this README from it.

- \`oracle.expected.ndjson\` is the oracle's output for the 92 files (for humans; the test re-runs the
  oracle). Every file is \`ok\` or \`rejected\`; none is \`error\`. Note that it is itself a \`.jsonl\`
  file: running the oracle directly over this folder adds a 93rd record for it (\`rejected\`,
  \`first_entry_not_session_header\`); pisa must reject it the same way, or the test can skip it.
- Lines are written as \`JSON.stringify\` writes them, except where the behaviour is the damage itself
  (BOM, CRLF, invalid UTF-8, truncation, raw control characters) and the two files marked
  **NOT Pi-written** (non-canonical JSON, duplicate keys).
- Files 13 (extension transcript), 10–12, 04 and 14 are rejected on purpose.
- The \`raw\` block is the oracle's own diagnostics, not Pi: it counts a BOM-only or Unicode-space
  line (blank to Pi) and the falsy JSON lines \`null\`/\`0\`/\`false\`/\`""\` (dropped by Pi) as
  "unparsable".
- Ids of migrated v1 files are printed by the oracle as \`#<n>\` (index in \`getEntries()\`).
- The oracle's \`version\` is read AFTER Pi's in-place migration, so it prints \`3\` for v1 and v2 files
  (never \`null\`, despite the oracle README); \`migratedFrom\` (1 or 2) carries the file's version.
- Not in the set, on purpose: a parent cycle on the active path or above a compaction (the oracle
  never returns); v1 id collisions (the oracle replaces Pi's random ids by a counter, so they never
  collide); files on which Pi's code throws (\`status: "error"\`): an assistant without \`usage\`, a usage
  without \`cost\`, a \`message\` entry without \`message\`, a projected compaction without \`summary\`, a text
  block without \`text\` in a projected assistant, any scalar line (\`42\`) in a v1 file (migration
  assigns \`id\` to it).
- \`forks/\` holds the §3 set: source 86, its fork 87, a fork of the fork 88, a copy without
  \`parentSession\` 89, a fork whose parent is gone 90, and a v1 source 91 with its \`forkFrom\` copy 92.

| file | behaviour | what the oracle shows (key fields) |
|---|---|---|
${rows.join("\n")}
`;
	fs.writeFileSync(path.join(DIR, "README.md"), text);
	process.stderr.write(`make-edge: wrote README.md (${rows.length} rows)\n`);
}

/** Run the oracle over a temporary copy of the set (so oracle.expected.ndjson never sees itself). */
async function runOracle() {
	const { execFileSync } = await import("node:child_process");
	const os = await import("node:os");
	const oracle = process.env.PISA_ORACLE ?? path.join(DIR, "..", "..", "oracle", "oracle.mjs");
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pisa-edge-"));
	try {
		for (const { rel, buf } of buildAll()) {
			fs.mkdirSync(path.dirname(path.join(tmp, rel)), { recursive: true });
			fs.writeFileSync(path.join(tmp, rel), buf);
		}
		const out = execFileSync("node", [oracle, tmp], { maxBuffer: 1 << 28 });
		fs.writeFileSync(path.join(DIR, "oracle.expected.ndjson"), out);
	} finally {
		fs.rmSync(tmp, { recursive: true, force: true });
	}
	process.stderr.write("make-edge: wrote oracle.expected.ndjson\n");
}

const args = process.argv.slice(2);
if (args[0] === "--readme") writeReadme(args[1] ?? path.join(DIR, "oracle.expected.ndjson"));
else if (args[0] === "--oracle") {
	await runOracle();
	writeReadme(path.join(DIR, "oracle.expected.ndjson"));
} else writeAll();
