// Code copied from Pi, for the two AgentSession methods the oracle cannot import.
//
// Source: @earendil-works/pi-coding-agent 1.6.0, file dist/core/agent-session.js (the published
// npm package; sha256 cd1c9fc3139e6dcd5320b55414aa5fdf12dbea32d4fd38da2c9a57be0d3677c3).
// Pi is MIT licensed: Copyright (c) 2025 Mario Zechner. The MIT notice is reproduced in
// tests/oracle/README.md ("Licence of the copied code").
//
// Why copied: under Node 20, agent-session.js cannot be imported at all. Its module graph loads
// undici, whose decompress interceptor calls zlib.createZstdDecompress (Node >= 22.15), and
// dist/index.js imports globSync from node:fs (Node 22). The modules these copies call
// (usage-totals.js, session-manager.js, compaction/compaction.js) import fine and are Pi's own.
//
// The copied lines keep Pi's compiled formatting (4 spaces) so they can be compared with the
// package line for line; the only edits are marked below: `this.sessionManager` becomes the
// `sessionManager` argument, and the parts that need a live AgentSession are left out.

/**
 * AgentSession#getSessionStats (agent-session.js lines 3559-3613): totals over ALL entries of the
 * session in file order. Lines 3560-3594 (the loop) are verbatim; the result is lines 3595-3612
 * without `sessionFile`, `sessionId` (no session file here) and `contextUsage` (needs a model).
 * Pi's usage helpers are passed in, as the module they live in is loaded from the located package.
 */
export function getSessionStats(sessionManager, { createUsageTotals, addUsageToTotals }) {
        let userMessages = 0;
        let assistantMessages = 0;
        let toolResults = 0;
        let totalMessages = 0;
        let toolCalls = 0;
        const usageTotals = createUsageTotals();
        for (const entry of sessionManager.getEntries()) {
            if (entry.type === "usage") {
                addUsageToTotals(usageTotals, entry.usage);
            }
            else if ((entry.type === "branch_summary" || entry.type === "compaction") && entry.usage) {
                addUsageToTotals(usageTotals, entry.usage);
            }
            if (entry.type !== "message")
                continue;
            totalMessages++;
            const message = entry.message;
            if (message.role === "user") {
                userMessages++;
            }
            else if (message.role === "toolResult") {
                toolResults++;
                if (message.usage) {
                    addUsageToTotals(usageTotals, message.usage);
                }
            }
            else if (message.role === "assistant") {
                assistantMessages++;
                const assistantMsg = message;
                if (Array.isArray(assistantMsg.content)) {
                    toolCalls += assistantMsg.content.filter((c) => c.type === "toolCall").length;
                }
                addUsageToTotals(usageTotals, assistantMsg.usage);
            }
        }
        return {
            // Pi: sessionFile: this.sessionFile,
            // Pi: sessionId: this.sessionId,
            userMessages,
            assistantMessages,
            toolCalls,
            toolResults,
            totalMessages,
            tokens: {
                input: usageTotals.input,
                output: usageTotals.output,
                cacheRead: usageTotals.cacheRead,
                cacheWrite: usageTotals.cacheWrite,
                total: usageTotals.input + usageTotals.output + usageTotals.cacheRead + usageTotals.cacheWrite,
            },
            cost: usageTotals.cost,
            // Pi: contextUsage: this.getContextUsage(),
        };
}

/**
 * The context size AgentSession#getContextUsage (agent-session.js lines 3614-3648) reports:
 * `estimate.tokens`, or null where Pi reports `tokens: null` (unknown). Lines 3621-3641 are
 * verbatim; left out are lines 3615-3620 (the model and its context window, which a session file
 * does not pin down; Pi returns undefined without one) and 3642-3647 (the percentage of that
 * window). Pi's functions are passed in, loaded from the located package.
 */
export function getContextUsageTokens(sessionManager, pi) {
    const { getLatestCompactionEntry, calculateContextTokens, estimateProjectedContextTokens } = pi;
        // After compaction, the last assistant usage reflects pre-compaction context size.
        // We can only trust usage from an assistant that responded after the latest compaction.
        // If no such assistant exists, context token count is unknown until the next LLM response.
        const projection = sessionManager.buildSessionProjection();
        const branch = sessionManager.getBranch();
        const latestCompaction = getLatestCompactionEntry(branch);
        if (latestCompaction) {
            const projectedAssistants = new Set(projection.entries.flatMap((entry) => entry.messages.some((message) => message.role === "assistant" &&
                message.stopReason !== "aborted" &&
                message.stopReason !== "error" &&
                calculateContextTokens(message.usage) > 0)
                ? [entry.sourceEntry.id]
                : []));
            const compactionIndex = branch.findIndex((entry) => entry.id === latestCompaction.id);
            const hasPostCompactionUsage = branch
                .slice(compactionIndex + 1)
                .some((entry) => projectedAssistants.has(entry.id));
            if (!hasPostCompactionUsage)
                return null; // Pi: return { tokens: null, contextWindow, percent: null };
        }
        const estimate = estimateProjectedContextTokens(projection, branch);
        return estimate.tokens;
}
