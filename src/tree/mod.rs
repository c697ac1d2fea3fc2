//! The session tree: migration to the current format, the id index, the leaf and paths.
//!
//! Mirrors `SessionManager`: `_loadEntries` → `migrateToCurrentVersion` → `_buildIndex`,
//! then `getEntries`, `getLeafEntry`, `getBranch`, `getTree` and `buildSessionPath`.
//! Unlike Pi, every walk carries a cycle guard: a parent loop is cut and reported.

use hashbrown::HashMap;

use crate::js::{self, Jv, Key};
use crate::parse::ParsedFile;
use crate::parse::entry::{Body, Entry, EntryType, Header, NonObject, Role};

/// A session rebuilt from an accepted file.
#[derive(Debug, Clone)]
pub struct Tree {
    pub header: Header,
    /// `getEntries()`: every kept value except `session` lines, in file order.
    pub entries: Entries,
    /// `session` lines after the first (Pi ignores them).
    pub extra_header_lines: u64,
    /// `header.version ?? 1`, as written.
    pub file_version: serde_json::Value,
    /// The version Pi migrated from (1 or 2), as written; `None` when no migration ran.
    pub migrated_from: Option<serde_json::Value>,
    /// The file was v1: entry ids are invented by pisa (`#<index>`), like the oracle prints them.
    pub was_v1: bool,
    /// `byId`: id → index of the last entry with that id.
    pub by_id: HashMap<Key, u32>,
    /// What `byId` gives for each entry's `parentId` (looked up once: walks up the tree are
    /// most of a file's lookups, several per entry).
    parents: Vec<Option<u32>>,
    /// `leafId`: the id of the last entry; `None` when there are no entries.
    pub leaf_id: Option<Key>,
    /// Why Pi's own code would throw on this file, if it would (pisa goes on).
    pub pi_error: Option<&'static str>,
}

/// `getEntries()`, where the parse put them: the file's entries with the header still in front
/// (taken out, every entry of every file was moved down by one place, 80 MB of moves in a scan
/// of 1.5 GB), seen as the slice after it.
#[derive(Debug, Clone, Default)]
pub struct Entries {
    all: Vec<Entry>,
    /// How many entries in front of `all` are not `getEntries()`'s (0 or 1).
    skip: usize,
}

impl Entries {
    /// The vector, header and all (to be recycled).
    pub fn into_vec(self) -> Vec<Entry> {
        self.all
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::ops::Deref for Entries {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        &self.all[self.skip..]
    }
}

impl std::ops::DerefMut for Entries {
    fn deref_mut(&mut self) -> &mut [Entry] {
        &mut self.all[self.skip..]
    }
}

/// A root-to-leaf list of entry indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path {
    pub entries: Vec<u32>,
    /// The walk met an entry twice and was cut there (Pi would loop forever).
    pub cyclic: bool,
}

impl Tree {
    /// Migrate and index an accepted file. Returns `None` for a rejected one.
    pub fn build(parsed: ParsedFile) -> Option<Tree> {
        let header = parsed.header()?.clone();
        let mut all = parsed.entries;
        let file_version = header
            .version
            .clone()
            .filter(|v| !v.is_null())
            .unwrap_or(serde_json::Value::from(1));
        let v = js::js_to_number(&file_version);
        let mut pi_error = None;
        let was_v1 = v < 2.0;
        if was_v1 {
            pi_error = migrate_v1(&mut all);
        }
        if v < 3.0 {
            for e in &mut all {
                if let Body::Message(m) = &mut e.body
                    && m.role == Role::HookMessage
                {
                    m.role = Role::Custom;
                }
            }
        }
        let migrated_from = (v < 3.0).then(|| file_version.clone());
        let extra_header_lines = all.iter().skip(1).filter(|e| e.ty == EntryType::Session).count() as u64;
        // The header stays in front, skipped; other session lines, rare, are filtered out.
        let entries = if extra_header_lines > 0 {
            all.retain(|e| e.ty != EntryType::Session);
            Entries { all, skip: 0 }
        } else {
            let skip = usize::from(all.first().is_some_and(|e| e.ty == EntryType::Session));
            Entries { all, skip }
        };
        let mut by_id = HashMap::with_capacity(entries.len());
        let mut repeated = false;
        for (i, e) in entries.iter().enumerate() {
            repeated |= by_id.insert(e.id.clone(), i as u32).is_some();
        }
        // Pi appends an entry under the one before it: when no id repeats, that one is the
        // entry `byId` names, found without a lookup.
        let parents = entries
            .iter()
            .enumerate()
            .map(|(i, e)| match i.checked_sub(1) {
                Some(before) if !repeated && entries[before].id == e.parent => Some(before as u32),
                _ => by_id.get(&e.parent).copied(),
            })
            .collect();
        let leaf_id = entries.last().map(|e| e.id.clone());
        Some(Tree {
            header,
            entries,
            extra_header_lines,
            file_version,
            migrated_from,
            was_v1,
            by_id,
            parents,
            leaf_id,
            pi_error,
        })
    }

    /// `getLeafEntry()`: the entry the leaf id resolves to.
    pub fn leaf(&self) -> Option<u32> {
        self.leaf_id
            .as_ref()
            .filter(|k| k.truthy())
            .and_then(|k| self.by_id.get(k).copied())
    }

    /// `getBranch(fromId)`: from the entry `from` names up to a root, reversed.
    pub fn branch(&self, from: &Key) -> Path {
        if !from.truthy() {
            return Path::default();
        }
        self.walk(self.by_id.get(from).copied())
    }

    /// `getBranch()` from the session leaf.
    pub fn active_branch(&self) -> Path {
        match &self.leaf_id {
            Some(k) => self.branch(k),
            None => Path::default(),
        }
    }

    /// `buildSessionPath(entries, leafId, byId)`: like [`Tree::branch`], but a falsy or
    /// unknown leaf id falls back to the last entry, and `null` gives an empty path.
    pub fn session_path(&self, leaf: Option<&Key>) -> Path {
        let start = match leaf {
            None | Some(Key::Null) => return Path::default(),
            Some(k) if k.truthy() => self.by_id.get(k).copied(),
            Some(_) => None,
        };
        let start = start.or_else(|| self.entries.len().checked_sub(1).map(|i| i as u32));
        self.walk(start)
    }

    /// The path Pi's projection uses for the session leaf.
    pub fn active_session_path(&self) -> Path {
        self.session_path(self.leaf_id.as_ref())
    }

    fn walk(&self, start: Option<u32>) -> Path {
        let mut path = Path::default();
        let mut seen = vec![false; self.entries.len()];
        let mut cur = start;
        while let Some(i) = cur {
            if std::mem::replace(&mut seen[i as usize], true) {
                path.cyclic = true;
                break;
            }
            path.entries.push(i);
            cur = if self.entries[i as usize].parent.truthy() {
                self.parents[i as usize]
            } else {
                None
            };
        }
        path.entries.reverse();
        path
    }

    /// `getBranch()` from entry `i`: its path up to a root, reversed.
    pub fn branch_from(&self, i: u32) -> Path {
        self.walk(Some(i))
    }

    /// A flag per entry, set for `entries`.
    pub fn marked(&self, entries: &[u32]) -> Vec<bool> {
        let mut marks = vec![false; self.entries.len()];
        for &i in entries {
            marks[i as usize] = true;
        }
        marks
    }

    /// `getTree().length`: entries whose `parentId` is `null`, their own id, or names no entry.
    pub fn root_count(&self) -> u64 {
        self.entries
            .iter()
            .zip(&self.parents)
            .filter(|(e, parent)| e.parent == Key::Null || e.parent == e.id || parent.is_none())
            .count() as u64
    }

    /// An id as the oracle prints it (`#<n>` for migrated v1 files).
    pub fn id_json(&self, i: u32) -> serde_json::Value {
        self.entries[i as usize].id.to_json()
    }

    /// A reference to an id (`firstKeptEntryId`) as the oracle prints it: in a migrated v1
    /// file, a reference that resolves to no entry prints as `#?`.
    pub fn ref_json(&self, k: &Key) -> serde_json::Value {
        match k {
            Key::Undefined | Key::Null => serde_json::Value::Null,
            k if self.was_v1 && !self.by_id.contains_key(k) => "#?".into(),
            k => k.to_json(),
        }
    }

    /// The project of the session: the header's `cwd` when it is a string.
    pub fn cwd(&self) -> Option<&str> {
        self.header.cwd.as_ref().and_then(|v| v.as_str())
    }

    /// `getSessionName()`: the latest `session_info` name, trimmed; empty clears it.
    pub fn name(&self) -> Result<Option<String>, &'static str> {
        for e in self.entries.iter().rev() {
            if let Body::SessionInfo(name) = &e.body {
                return match name {
                    None | Some(serde_json::Value::Null) => Ok(None),
                    Some(serde_json::Value::String(s)) => {
                        let t = js::js_trim(s);
                        Ok((!t.is_empty()).then(|| t.to_string()))
                    }
                    Some(_) => Err("session_info name is not a string (name.trim throws)"),
                };
            }
        }
        Ok(None)
    }

    /// The thinking level and model of a path (`getSessionContextSettings`).
    pub fn settings(&self, path: &Path) -> (Jv, Option<(Jv, Jv)>) {
        // The last of each along the path, borrowed; only those two are copied (every
        // assistant message names its model, and copying each was a tenth of a scan's
        // allocations).
        let mut thinking = None;
        let mut model = None;
        for &i in &path.entries {
            match &self.entries[i as usize].body {
                Body::ThinkingLevel(t) => thinking = Some(t),
                Body::ModelChange(_) => model = Some(i),
                Body::Message(m) if m.role == Role::Assistant => model = Some(i),
                _ => {}
            }
        }
        let thinking = thinking.map_or_else(|| Some("off".into()), Clone::clone);
        let model = model.and_then(|i| match &self.entries[i as usize].body {
            Body::ModelChange(m) => Some((m.provider.clone(), m.model_id.clone())),
            Body::Message(m) => Some((m.provider.to_jv(), m.model.to_jv())),
            _ => None,
        });
        (thinking, model)
    }
}

/// v1 → v2: ids and parents in file order; `firstKeptEntryIndex` → `firstKeptEntryId`.
/// Pi's ids are random; pisa's are `#<n>`, n = the entry's index in `getEntries()`.
fn migrate_v1(all: &mut [Entry]) -> Option<&'static str> {
    let mut pi_error = None;
    // Index in getEntries() of each entry of the full list (session lines have none).
    let mut entry_index = Vec::with_capacity(all.len());
    let mut n = 0u32;
    for e in all.iter() {
        if e.ty == EntryType::Session {
            entry_index.push(None);
        } else {
            entry_index.push(Some(n));
            n += 1;
        }
    }
    let mut prev = Key::Null;
    for i in 0..all.len() {
        let Some(k) = entry_index[i] else { continue };
        if matches!(
            all[i].ty,
            EntryType::NonObject(NonObject::Number | NonObject::String | NonObject::Boolean)
        ) {
            // Assigning `entry.id` on a primitive throws in strict-mode code.
            pi_error.get_or_insert("v1 migration cannot set an id on a non-object line");
            continue;
        }
        let id = Key::Str(format!("#{k}").into());
        all[i].id = id.clone();
        all[i].parent = std::mem::replace(&mut prev, id);
        let idx = match &all[i].body {
            Body::Compaction(c) => c.first_kept_index,
            _ => None,
        };
        if let Some(idx) = idx
            && idx >= 0.0
            && idx.fract() == 0.0
            && (idx as usize) < all.len()
        {
            let t = idx as usize;
            if all[t].ty != EntryType::Session {
                // Entries before (and including) this one already carry their new id;
                // later ones still carry what the line said.
                let target_id = all[t].id.clone();
                if let Body::Compaction(c) = &mut all[i].body {
                    c.first_kept = target_id;
                }
            }
        }
    }
    pi_error
}

/// A tree from a v3 header and the given entry lines (for unit tests of later stages).
#[cfg(test)]
pub fn tree_of(entries: &[&str]) -> Tree {
    let mut lines = vec![r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"}"#];
    lines.extend_from_slice(entries);
    tree(&lines)
}

/// A tree from whole lines, header included.
#[cfg(test)]
pub fn tree(lines: &[&str]) -> Tree {
    let text = lines.join("\n") + "\n";
    Tree::build(crate::parse::parse_file(
        text.as_bytes(),
        &mut crate::parse::Scratch::default(),
    ))
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H3: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"}"#;

    #[test]
    fn later_duplicate_id_wins_and_leaf_is_last() {
        let t = tree(&[
            H3,
            r#"{"type":"custom","id":"a","parentId":null}"#,
            r#"{"type":"custom","id":"b","parentId":"a"}"#,
            r#"{"type":"custom","id":"a","parentId":"b"}"#,
        ]);
        assert_eq!(t.by_id[&Key::str("a")], 2);
        assert_eq!(t.leaf(), Some(2));
        // a(2) -> b(1) -> a(2): the duplicate makes a loop, which the guard cuts.
        let p = t.active_branch();
        assert!(p.cyclic);
        assert_eq!(p.entries, vec![1, 2]);
    }

    #[test]
    fn missing_parent_ends_the_walk_and_counts_as_root() {
        let t = tree(&[
            H3,
            r#"{"type":"custom","id":"a","parentId":null}"#,
            r#"{"type":"custom","id":"b","parentId":"zz"}"#,
        ]);
        assert_eq!(t.active_branch().entries, vec![1]);
        assert_eq!(t.root_count(), 2);
    }

    #[test]
    fn leaf_without_id_empties_branch_but_not_session_path() {
        let t = tree(&[
            H3,
            r#"{"type":"custom","id":"a","parentId":null}"#,
            r#"{"type":"custom","parentId":"a"}"#,
        ]);
        assert!(t.active_branch().entries.is_empty());
        assert_eq!(t.active_session_path().entries, vec![0, 1]);
    }

    #[test]
    fn v1_migration_invents_ids_and_resolves_first_kept_index() {
        let t = tree(&[
            r#"{"type":"session","id":"s","timestamp":"t"}"#,
            r#"{"type":"message","message":{"role":"user","content":"a"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"b"}}"#,
            r#"{"type":"compaction","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}"#,
        ]);
        assert!(t.was_v1);
        assert_eq!(t.entries[1].id, Key::str("#1"));
        assert_eq!(t.entries[1].parent, Key::str("#0"));
        assert_eq!(t.entries[0].parent, Key::Null);
        let Body::Compaction(c) = &t.entries[2].body else {
            panic!()
        };
        assert_eq!(c.first_kept, Key::str("#1"));
        assert_eq!(t.migrated_from, Some(serde_json::json!(1)));
    }

    proptest::proptest! {
        /// Each entry's parent is the entry `byId` names, whether it was found by the lookup or
        /// as the entry before: with ids and parents from a few values (repeated ids, no id,
        /// `null`, numbers, objects), so that entries often hang under the one before.
        #[test]
        fn parents_are_the_entries_by_id_names(links in proptest::collection::vec((0usize..7, 0usize..7), 1..12)) {
            const VALUES: [&str; 7] = [r#""a""#, r#""b""#, r#""c""#, "null", "1", "{}", ""];
            let field = |name: &str, v: usize| match VALUES[v] {
                "" => String::new(),
                value => format!(r#","{name}":{value}"#),
            };
            let lines: Vec<String> = links
                .iter()
                .map(|&(id, parent)| format!(r#"{{"type":"custom"{}{}}}"#, field("id", id), field("parentId", parent)))
                .collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let t = tree_of(&lines);
            for (i, e) in t.entries.iter().enumerate() {
                proptest::prop_assert_eq!(t.parents[i], t.by_id.get(&e.parent).copied(), "entry {} of {:?}", i, lines);
            }
        }
    }

    #[test]
    fn v2_hook_message_becomes_custom() {
        let t = tree(&[
            r#"{"type":"session","version":2,"id":"s"}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","content":"x"}}"#,
        ]);
        let Body::Message(m) = &t.entries[0].body else { panic!() };
        assert_eq!(m.role, Role::Custom);
    }
}
