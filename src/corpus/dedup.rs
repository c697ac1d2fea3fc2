//! The cross-session step: each billed call counted once. A call is owned by the earliest
//! session (header time, then path) that holds it; every other copy (a fork's copy of its
//! parent's history, a subagent transcript's copy of its child's answers) is inherited, and so
//! is a subagent tool result's part for a child whose own records are in the corpus (see
//! `subagents`). Also: the parent sessions found in the corpus.

use hashbrown::{HashMap, HashSet};

use super::{Calls, Corpus, Inherited, spill};
use crate::js;
use crate::paths::base_name;
use crate::usage::Totals;

/// Identities looked at in one pass of the fork deduplication: a set of this many fits a
/// 262,144-bucket table (8.4 MB), whatever the size of the corpus. Each pass reads every call's
/// identity again, one core alone: with 50,000 a 15 GB corpus took 37 passes, a second of a scan
/// that the other core spent waiting; now 10.
const PASS_CALLS: u64 = 200_000;

/// From this many calls on, the passes run in two lanes side by side (each lane its own set):
/// the deduplication is the longest step after the parallel scan, 10 of 480 ms on the 1.5 GB
/// corpus, when the other core had nothing to do.
const LANE_CALLS: u64 = 20_000;

/// A file that holds billed calls: a session, or a subagent transcript (by its place in the
/// corpus's lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder {
    Session(usize),
    Transcript(usize),
}

impl Corpus {
    /// Cross-session figures: sort, mark inherited calls, own totals, subagents, parents.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        self.sessions.sort_by(|a, b| js::cmp_utf16(&a.rel, &b.rel));
        self.rejected.sort_by(|a, b| js::cmp_utf16(a.rel(), b.rel()));
        // Owner of a billed call = the earliest session holding it (header time, then path);
        // transcripts come after every session, in path order.
        let mut order: Vec<usize> = (0..self.sessions.len()).collect();
        order.sort_by(|&a, &b| {
            let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
            let ta = sa.started_ms.unwrap_or(f64::INFINITY);
            let tb = sb.started_ms.unwrap_or(f64::INFINITY);
            ta.total_cmp(&tb).then_with(|| js::cmp_utf16(&sa.rel, &sb.rel))
        });
        let transcripts = (0..self.rejected.len()).filter(|&i| self.rejected[i].transcript.is_some());
        let holders: Vec<Holder> = order
            .iter()
            .map(|&i| Holder::Session(i))
            .chain(transcripts.map(Holder::Transcript))
            .collect();
        let calls: u64 = holders.iter().map(|&h| self.calls_of(h).count).sum();
        let lanes = match rayon::current_num_threads() > 1 && calls >= LANE_CALLS {
            true => 2,
            false => 1,
        };
        self.mark_inherited(&holders, PASS_CALLS, lanes)?;
        self.link_subagents(&order);
        self.sum_own(&holders)?;
        self.roll_up_subagents();
        self.find_parents();
        Ok(())
    }

    /// The calls of a holder.
    pub(super) fn calls_of(&mut self, h: Holder) -> &mut Calls {
        match h {
            Holder::Session(i) => &mut self.sessions[i].calls,
            Holder::Transcript(i) => &mut self.rejected[i].transcript.as_mut().expect("a transcript").calls,
        }
    }

    /// Each holder's own totals, in `holders` order, the corpus totals and the naive sum of
    /// Pi's per-session totals; and which compactions are a fork's copies.
    fn sum_own(&mut self, holders: &[Holder]) -> std::io::Result<()> {
        let mut seen_compactions: HashSet<u128> = HashSet::new();
        let mut buf = Vec::new();
        for &h in holders {
            let spill = std::sync::Arc::clone(&self.spill);
            let calls = self.calls_of(h);
            let own = if calls.inherited.is_empty() && matches!(h, Holder::Session(_)) {
                None
            } else {
                spill.get_into(calls.totals, &mut buf)?;
                let mut own = Totals::default();
                for (t, why) in spill::totals(&buf).zip(calls.reasons()) {
                    if why.is_none() {
                        own.merge(&t);
                    }
                }
                Some(own)
            };
            let (count, inherited) = (calls.count, calls.inherited.len() as u64);
            self.calls += count;
            self.inherited_calls += inherited;
            let own = match h {
                Holder::Transcript(_) => own.unwrap_or_default(),
                Holder::Session(i) => {
                    let s = &mut self.sessions[i];
                    for c in &mut s.compactions {
                        c.inherited = seen_compactions.contains(&c.identity);
                    }
                    seen_compactions.extend(s.compactions.iter().map(|c| c.identity));
                    // Without inherited calls: the same sums in the same order as the session's.
                    let own = own.unwrap_or(s.row.totals);
                    s.row.own = own;
                    self.naive_totals.merge(&s.row.totals);
                    own
                }
            };
            self.calls_of(h).own = own;
            self.totals.merge(&own);
        }
        Ok(())
    }

    /// parentInCorpus: a scanned file whose name equals that of parentSession (last wins).
    fn find_parents(&mut self) {
        let mut by_name: HashMap<String, String> = HashMap::new();
        let mut names: Vec<&str> = self
            .sessions
            .iter()
            .map(|s| s.rel.as_str())
            .chain(self.rejected.iter().map(|r| r.rel()))
            .collect();
        names.sort_by(|a, b| js::cmp_utf16(a, b));
        for rel in names {
            by_name.insert(base_name(rel).to_string(), rel.to_string());
        }
        for s in &mut self.sessions {
            s.parent_in_corpus = s
                .parent_session
                .as_deref()
                .and_then(|p| by_name.get(base_name(p)))
                .cloned();
        }
    }

    /// A call is inherited when a holder earlier in `holders` holds the same identity: a
    /// session (for a transcript's copy of a session's answer, [`Inherited::Session`]) or
    /// another copy ([`Inherited::Copy`]); or when it repeats an earlier line of its own file
    /// ([`Inherited::Repeat`], found by the worker). The identities are read back from the spill in
    /// passes, each over the identities whose high bits fall in one part, so the set of those
    /// seen stays small however many calls the corpus has. With `lanes` 2 the passes are shared
    /// between two cores, each with its own set.
    fn mark_inherited(&mut self, holders: &[Holder], pass_calls: u64, lanes: u64) -> std::io::Result<()> {
        let calls: u64 = holders.iter().map(|&h| self.calls_of(h).count).sum();
        let lanes = lanes.clamp(1, 2);
        let passes = calls.div_ceil(pass_calls).max(1).next_multiple_of(lanes);
        for &h in holders {
            if let Holder::Session(i) = h {
                let s = &mut self.sessions[i];
                s.calls.inherited = s.repeats.iter().map(|&k| (k, Inherited::Repeat)).collect();
            }
        }
        // What each holder's calls are: where their identities wait, how many, the repeats
        // (never looked up) and whether it is a session.
        let work: Vec<(spill::Span, u64, &[u32], bool)> = holders
            .iter()
            .map(|&h| match h {
                Holder::Session(i) => {
                    let s = &self.sessions[i];
                    (s.calls.identities, s.calls.count, &s.repeats[..], true)
                }
                Holder::Transcript(i) => {
                    let t = self.rejected[i].transcript.as_ref().expect("a transcript");
                    (t.calls.identities, t.calls.count, &[][..], false)
                }
            })
            .collect();
        let spill = &self.spill;
        let per_pass = calls.div_ceil(passes).min(pass_calls);
        let lane = |lane: u64| -> std::io::Result<Vec<Vec<(u32, Inherited)>>> {
            let mut found = vec![Vec::new(); work.len()];
            // Seen identities, and whether a session holds them.
            let mut seen: HashMap<u128, bool> = HashMap::with_capacity((per_pass * 8 / 7) as usize);
            let mut fresh: Vec<u128> = Vec::new();
            let mut buf = Vec::new();
            for pass in (lane..passes).step_by(lanes as usize) {
                seen.clear();
                for (found, &(span, count, repeats, session)) in found.iter_mut().zip(&work) {
                    if count == 0 {
                        continue;
                    }
                    spill.get_into(span, &mut buf)?;
                    fresh.clear();
                    for (k, id) in spill::identities(&buf).enumerate() {
                        if ((id >> 64) as u64) % passes != pass
                            || (!repeats.is_empty() && repeats.binary_search(&(k as u32)).is_ok())
                        {
                            continue;
                        }
                        match seen.get(&id) {
                            Some(true) if !session => found.push((k as u32, Inherited::Session)),
                            Some(_) => found.push((k as u32, Inherited::Copy)),
                            None => fresh.push(id),
                        }
                    }
                    seen.extend(fresh.drain(..).map(|id| (id, session)));
                }
            }
            Ok(found)
        };
        let found = match lanes {
            1 => vec![lane(0)?],
            _ => {
                let (a, b) = rayon::join(|| lane(0), || lane(1));
                vec![a?, b?]
            }
        };
        drop(work);
        for found in found {
            for (&h, calls) in holders.iter().zip(found) {
                self.calls_of(h).inherited.extend(calls);
            }
        }
        for &h in holders {
            let repeats = matches!(h, Holder::Session(i) if !self.sessions[i].repeats.is_empty());
            let inherited = &mut self.calls_of(h).inherited;
            if passes > 1 || repeats {
                inherited.sort_unstable_by_key(|(k, _)| *k);
            }
            // Kept until the end of the run: no room to spare (a fork's list grew pass by pass).
            inherited.shrink_to_fit();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::SessionSummary;
    use super::spill::Spill;
    use super::*;

    /// Sessions holding the given identities (some shared), in a corpus with a spill.
    fn corpus_of(lists: &[Vec<u128>], spill: Spill) -> Corpus {
        let mut buf = Vec::new();
        let sessions = lists
            .iter()
            .enumerate()
            .map(|(i, ids)| {
                spill::encode_identities(ids.iter().copied(), &mut buf);
                SessionSummary {
                    rel: format!("s{i:03}.jsonl"),
                    calls: Calls {
                        identities: spill.put(&buf),
                        count: ids.len() as u64,
                        ..Calls::default()
                    },
                    started_ms: Some((i % 7) as f64),
                    ..Default::default()
                }
            })
            .collect();
        Corpus {
            sessions,
            spill: Arc::new(spill),
            ..Default::default()
        }
    }

    /// The rule itself, with one set: inherited when an earlier session holds the identity.
    fn naive(lists: &[Vec<u128>], order: &[usize]) -> Vec<Vec<u32>> {
        let mut seen = HashSet::new();
        let mut out = vec![Vec::new(); lists.len()];
        for &i in order {
            for (k, id) in lists[i].iter().enumerate() {
                if seen.contains(id) {
                    out[i].push(k as u32);
                }
            }
            seen.extend(lists[i].iter().copied());
        }
        out
    }

    #[test]
    fn inherited_calls_are_the_same_in_one_pass_or_many_and_in_memory() {
        // Forks: each session copies a prefix of an earlier one, then adds calls of its own,
        // some twice (a call repeated within one session is not inherited).
        let mut next = 0u128;
        let mut fresh = || {
            next += 1;
            xxhash_rust::xxh3::xxh3_128(&next.to_le_bytes())
        };
        let mut lists: Vec<Vec<u128>> = Vec::new();
        for i in 0..60usize {
            let mut ids: Vec<u128> = match i % 3 {
                0 if i > 0 => lists[i / 2][..lists[i / 2].len() / 2].to_vec(),
                _ => Vec::new(),
            };
            for j in 0..(i % 11 + 1) {
                let id = fresh();
                ids.push(id);
                if j % 4 == 0 {
                    ids.push(id);
                }
            }
            lists.push(ids);
        }
        let total: usize = lists.iter().map(Vec::len).sum();
        for (spill, pass_calls, lanes) in [
            (Spill::new(), 1_000_000, 1),
            (Spill::new(), 7, 1),
            (Spill::new(), 1, 1),
            (Spill::in_memory(), 5, 1),
            (Spill::new(), 1_000_000, 2),
            (Spill::new(), 7, 2),
            (Spill::in_memory(), 5, 2),
        ] {
            let mut c = corpus_of(&lists, spill);
            let mut order: Vec<usize> = (0..lists.len()).collect();
            order.sort_by_key(|&i| (i % 7, i));
            let holders: Vec<Holder> = order.iter().map(|&i| Holder::Session(i)).collect();
            c.mark_inherited(&holders, pass_calls, lanes).unwrap();
            let got: Vec<Vec<u32>> = c
                .sessions
                .iter()
                .map(|s| s.calls.inherited.iter().map(|(k, _)| *k).collect())
                .collect();
            let want = naive(&lists, &order);
            assert!(
                want.iter().map(Vec::len).sum::<usize>() > total / 10,
                "the test has forks"
            );
            assert_eq!(got, want, "passes of {pass_calls} calls, {lanes} lanes");
        }
    }
}
