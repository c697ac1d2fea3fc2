//! The cross-session step: each billed call counted once. A call is owned by the earliest
//! session (header time, then path) that holds it; every other copy (a fork's copy of its
//! parent's history) is inherited. Also: the parent sessions found in the corpus.

use hashbrown::{HashMap, HashSet};

use super::{Corpus, spill};
use crate::js;
use crate::paths::base_name;
use crate::usage::Totals;

/// Identities looked at in one pass of the fork deduplication: a set of this many fits a
/// 65,536-bucket table (1.1 MB), whatever the size of the corpus.
const PASS_CALLS: u64 = 50_000;

impl Corpus {
    /// Cross-session figures: sort, mark inherited calls, own totals, parents in the corpus.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        self.sessions.sort_by(|a, b| js::cmp_utf16(&a.rel, &b.rel));
        self.rejected.sort_by(|a, b| js::cmp_utf16(a.rel(), b.rel()));
        // Owner of a billed call = the earliest session holding it (header time, then path).
        let mut order: Vec<usize> = (0..self.sessions.len()).collect();
        order.sort_by(|&a, &b| {
            let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
            let ta = sa.started_ms.unwrap_or(f64::INFINITY);
            let tb = sb.started_ms.unwrap_or(f64::INFINITY);
            ta.total_cmp(&tb).then_with(|| js::cmp_utf16(&sa.rel, &sb.rel))
        });
        self.mark_inherited(&order, PASS_CALLS)?;
        let mut seen_compactions: HashSet<u128> = HashSet::new();
        let mut buf = Vec::new();
        for &i in &order {
            let s = &mut self.sessions[i];
            let own = if s.inherited.is_empty() {
                // The same sums in the same order as the session's own totals.
                s.row.totals
            } else {
                self.spill.get_into(s.call_totals, &mut buf)?;
                let mut own = Totals::default();
                let mut inherited = s.inherited.iter().peekable();
                for (k, t) in spill::totals(&buf).enumerate() {
                    if inherited.next_if_eq(&&(k as u32)).is_none() {
                        own.merge(&t);
                    }
                }
                own
            };
            for c in &mut s.compactions {
                c.inherited = seen_compactions.contains(&c.identity);
            }
            seen_compactions.extend(s.compactions.iter().map(|c| c.identity));
            s.row.own = own;
            self.totals.merge(&own);
            self.naive_totals.merge(&s.row.totals);
            self.inherited_calls += s.inherited.len() as u64;
            self.calls += s.calls;
        }
        // parentInCorpus: a scanned file whose name equals that of parentSession (last wins).
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
        Ok(())
    }

    /// A call is inherited when a session earlier in `order` holds the same identity. The
    /// identities are read back from the spill in passes, each over the identities whose
    /// high bits fall in one part, so the set of those seen stays small however many
    /// calls the corpus has.
    fn mark_inherited(&mut self, order: &[usize], pass_calls: u64) -> std::io::Result<()> {
        let calls: u64 = self.sessions.iter().map(|s| s.calls).sum();
        let passes = calls.div_ceil(pass_calls).max(1);
        let mut seen: HashSet<u128> = HashSet::with_capacity(calls.min(pass_calls * 8 / 7) as usize);
        let mut fresh: Vec<u128> = Vec::new();
        let mut buf = Vec::new();
        for pass in 0..passes {
            seen.clear();
            for &i in order {
                let s = &mut self.sessions[i];
                if s.calls == 0 {
                    continue;
                }
                self.spill.get_into(s.identities, &mut buf)?;
                fresh.clear();
                for (k, id) in spill::identities(&buf).enumerate() {
                    if ((id >> 64) as u64) % passes != pass {
                        continue;
                    }
                    if seen.contains(&id) {
                        s.inherited.push(k as u32);
                    } else {
                        fresh.push(id);
                    }
                }
                seen.extend(fresh.drain(..));
            }
        }
        if passes > 1 {
            for s in &mut self.sessions {
                s.inherited.sort_unstable();
            }
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
                    identities: spill.put(&buf),
                    calls: ids.len() as u64,
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
        for (spill, pass_calls) in [
            (Spill::new(), 1_000_000),
            (Spill::new(), 7),
            (Spill::new(), 1),
            (Spill::in_memory(), 5),
        ] {
            let mut c = corpus_of(&lists, spill);
            let mut order: Vec<usize> = (0..lists.len()).collect();
            order.sort_by_key(|&i| (i % 7, i));
            c.mark_inherited(&order, pass_calls).unwrap();
            let got: Vec<Vec<u32>> = c.sessions.iter().map(|s| s.inherited.clone()).collect();
            let want = naive(&lists, &order);
            assert!(
                want.iter().map(Vec::len).sum::<usize>() > total / 10,
                "the test has forks"
            );
            assert_eq!(got, want, "passes of {pass_calls} calls");
        }
    }
}
