//! Subagents (see docs/subagents.md): which session spawned which, which subagent tool result
//! parts stand for calls the corpus holds elsewhere, and what each session's subagents cost.
//!
//! - A child session lives below its parent's stem folder (`<parent>/<runId>/run-<i>/…`,
//!   `<parent>/forks/…`, `<parent>/async-…/…`): the nearest folder of its path that is a
//!   session's stem names the session that spawned it.
//! - A subagent tool result (pi-subagents >= 0.59) sums each child's usage; pisa keeps one part
//!   per child (`usage::Source::Subagent`). A part is inherited when the child's session is in
//!   the corpus (found by the `sessionFile` the result names, else by `<stem>/<runId>/run-<i>/`),
//!   or else when its transcript is: the child's calls are counted there. Otherwise the part is
//!   the only record of them, and counts.
//! - A transcript belongs to the session whose tool result names its run: the one that owns
//!   the result's usage, else (a result without usage, or copies only) the earliest session
//!   naming the run, as a fork of the parent copies its tool results too.

use hashbrown::HashMap;

use super::{ChildCall, Corpus, Inherited};
use crate::usage::Totals;

impl Corpus {
    /// `spawned_by` of sessions and transcripts, and the reasons of subagent parts whose
    /// child is in the corpus; `order` is the sessions' holder order (earliest first).
    pub(super) fn link_subagents(&mut self, order: &[usize]) {
        let by_rel: HashMap<String, usize> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.rel.clone(), i))
            .collect();
        for s in &mut self.sessions {
            s.spawned_by = stem_parent(&s.rel, &by_rel);
        }
        let mut rels: Vec<&str> = self.sessions.iter().map(|s| s.rel.as_str()).collect();
        rels.sort_unstable();
        let rels: Vec<String> = rels.into_iter().map(str::to_string).collect();
        let transcripts: HashMap<(String, u32), usize> = self
            .rejected
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let t = r.transcript.as_ref()?;
                Some(((t.run_id.clone()?, t.child_index?), i))
            })
            .collect();
        let mut run_parent: HashMap<String, String> = HashMap::new();
        for p in 0..self.sessions.len() {
            let parent = self.sessions[p].rel.clone();
            let calls = std::mem::take(&mut self.sessions[p].child_calls);
            for cc in &calls {
                if self.sessions[p].calls.inherited.iter().any(|(k, _)| *k == cc.call) {
                    // A copy of another session's tool result (a fork of the parent).
                    continue;
                }
                if let Some(run) = &cc.run_id {
                    run_parent.insert(run.clone(), parent.clone());
                }
                let why = if let Some(child) = child_session(&parent, cc, &by_rel, &rels) {
                    self.sessions[child].spawned_by = Some(parent.clone());
                    Some(Inherited::Child)
                } else {
                    let key = (cc.run_id.clone().unwrap_or_default(), cc.index);
                    transcripts.contains_key(&key).then_some(Inherited::Transcript)
                };
                if let Some(why) = why {
                    let inherited = &mut self.sessions[p].calls.inherited;
                    let at = inherited.partition_point(|(k, _)| *k < cc.call);
                    inherited.insert(at, (cc.call, why));
                }
            }
            self.sessions[p].child_calls = calls;
        }
        for &p in order {
            for run in &self.sessions[p].runs {
                run_parent
                    .entry_ref(run.as_str())
                    .or_insert_with(|| self.sessions[p].rel.clone());
            }
        }
        for r in &mut self.rejected {
            if let Some(t) = &mut r.transcript {
                t.spawned_by = t.run_id.as_ref().and_then(|run| run_parent.get(run)).cloned();
            }
        }
    }

    /// Each session's children and what its subagents cost, nested subagents included.
    pub(super) fn roll_up_subagents(&mut self) {
        let by_rel: HashMap<String, usize> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.rel.clone(), i))
            .collect();
        let n = self.sessions.len();
        // What each session adds itself: its transcripts' and its parts' own calls.
        let mut direct = vec![Totals::default(); n];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in self.sessions.iter().enumerate() {
            if let Some(&p) = s.spawned_by.as_ref().and_then(|p| by_rel.get(p)) {
                children[p].push(i);
            }
        }
        for r in &self.rejected {
            let Some(t) = &r.transcript else { continue };
            if let Some(&p) = t.spawned_by.as_ref().and_then(|p| by_rel.get(p)) {
                direct[p].merge(&t.calls.own);
            }
        }
        for (i, d) in direct.iter_mut().enumerate() {
            d.merge(&self.own_parts(i));
        }
        let mut done: Vec<Option<Totals>> = vec![None; n];
        for i in 0..n {
            let total = subagent_total(i, &children, &direct, &self.sessions, &mut done, &mut vec![false; n]);
            self.sessions[i].subagent = total;
            self.sessions[i].children = children[i].iter().map(|&c| self.sessions[c].rel.clone()).collect();
        }
    }

    /// The totals of a session's subagent parts that count (no other record of their calls).
    fn own_parts(&self, i: usize) -> Totals {
        let s = &self.sessions[i];
        let parts = &s.child_calls;
        let mut sum = Totals::default();
        if parts.is_empty() {
            return sum;
        }
        let Ok(bytes) = self.spill.get(s.calls.totals) else {
            return sum;
        };
        let counted: Vec<bool> = s.calls.reasons().map(|w| w.is_none()).collect();
        for (k, t) in super::spill::totals(&bytes).enumerate() {
            if counted.get(k) == Some(&true) && parts.iter().any(|p| p.call as usize == k) {
                sum.merge(&t);
            }
        }
        sum
    }
}

/// What the subagents of session `i` cost: its own direct figures and, for each child, the
/// child's own calls and its subagents (each session once, even on a loop of links).
fn subagent_total(
    i: usize,
    children: &[Vec<usize>],
    direct: &[Totals],
    sessions: &[super::SessionSummary],
    done: &mut [Option<Totals>],
    visiting: &mut [bool],
) -> Totals {
    if let Some(t) = done[i] {
        return t;
    }
    if std::mem::replace(&mut visiting[i], true) {
        return Totals::default();
    }
    let mut total = direct[i];
    for &c in &children[i] {
        total.merge(&sessions[c].row.own);
        total.merge(&subagent_total(c, children, direct, sessions, done, visiting));
    }
    done[i] = Some(total);
    total
}

/// The session whose stem folder holds `rel`, the nearest one: `a/b.jsonl` for `a/b/x.jsonl` or
/// `a/b/run/run-0/session.jsonl`.
fn stem_parent(rel: &str, by_rel: &HashMap<String, usize>) -> Option<String> {
    let mut dir = rel.rsplit_once('/')?.0;
    loop {
        let candidate = format!("{dir}.jsonl");
        if by_rel.contains_key(&candidate) {
            return Some(candidate);
        }
        dir = dir.rsplit_once('/')?.0;
    }
}

/// The child session a subagent part names: the scanned session whose path ends the part's
/// `sessionFile` (an absolute path of the machine that wrote it), else the one below
/// `<stem of parent>/<runId>/run-<index>/`.
fn child_session(parent: &str, cc: &ChildCall, by_rel: &HashMap<String, usize>, sorted: &[String]) -> Option<usize> {
    if let Some(file) = &cc.session_file {
        let mut rest = file.as_str();
        while let Some((_, tail)) = rest.split_once('/') {
            if let Some(&i) = by_rel.get(tail) {
                return Some(i);
            }
            rest = tail;
        }
        if let Some(&i) = by_rel.get(rest) {
            return Some(i);
        }
    }
    let run = cc.run_id.as_deref()?;
    let prefix = format!("{}/{run}/run-{}/", parent.strip_suffix(".jsonl")?, cc.index);
    let at = sorted.partition_point(|r| r.as_str() < prefix.as_str());
    sorted
        .get(at)
        .filter(|r| r.starts_with(&prefix))
        .and_then(|r| by_rel.get(r))
        .copied()
}
