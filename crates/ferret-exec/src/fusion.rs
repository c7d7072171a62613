use std::collections::HashMap;

use ferret_core::Hit;

use crate::canonical_url;

/// The usual RRF constant (Cormack et al.): damps the advantage of the very first ranks.
pub const RRF_K: f32 = 60.0;

/// What identifies a hit when merging: ids are only unique within a backend; across backends,
/// the same page is the same URL.
#[derive(PartialEq, Eq, Hash)]
enum Key<'a> {
    Id(&'a str, &'a str),
    Url(String),
}

/// Fuse ranked lists by reciprocal rank fusion, merging hits that share a backend and id, or a
/// canonical URL. The lists are borrowed and a hit is copied once, when it first appears, so
/// callers fuse what they hold (cached lists, hits in a new order) without copying it first.
///
/// A merged hit keeps the fields of its first occurrence (lists earlier in `lists` win) and its
/// score becomes the fused score. Ties are broken by first appearance, so the order is
/// deterministic for the same input.
pub fn dedup_and_fuse<'a, L>(lists: impl IntoIterator<Item = L>, k: f32) -> Vec<Hit>
where
    L: IntoIterator<Item = &'a Hit>,
{
    let mut slot_of_key: HashMap<Key<'a>, usize> = HashMap::new();
    let mut fused: Vec<Hit> = Vec::new();
    // For each slot, the last list (counted from 1) that scored it: RRF counts each result once
    // per list, at its best rank there.
    let mut scored_by: Vec<usize> = Vec::new();
    for (list_number, list) in lists.into_iter().enumerate().map(|(n, l)| (n + 1, l)) {
        for (rank, hit) in list.into_iter().enumerate() {
            let id_key = Key::Id(&hit.backend, &hit.id.0);
            let url_key = hit.url.as_deref().map(|u| Key::Url(canonical_url(u)));
            let existing = slot_of_key
                .get(&id_key)
                .or_else(|| url_key.as_ref().and_then(|u| slot_of_key.get(u)))
                .copied();
            let slot = existing.unwrap_or_else(|| {
                fused.push(Hit {
                    score: 0.0,
                    ..hit.clone()
                });
                scored_by.push(0);
                fused.len() - 1
            });
            if scored_by[slot] != list_number {
                scored_by[slot] = list_number;
                fused[slot].score += 1.0 / (k + rank as f32 + 1.0);
            }
            slot_of_key.insert(id_key, slot);
            if let Some(u) = url_key {
                slot_of_key.insert(u, slot);
            }
        }
    }
    // A stable sort keeps first appearance as the tie-break, so the order is deterministic.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// The first list's top `lead` results, then each later list's best result in list order, then
/// the rest of each list in list order; duplicates merge as in [`dedup_and_fuse`]. This is how
/// the hops of a multi-hop search combine: the first search answered the question as asked, so
/// its head stays; a hop looks for one document, so its head is what it adds; and the first
/// search's ranking of everything else is kept (summing would lift what several searches found
/// twice above a hop's target).
pub fn dedup_heads_first(lists: &[Vec<Hit>], lead: usize) -> Vec<Hit> {
    let Some((first, later)) = lists.split_first() else {
        return Vec::new();
    };
    let lead = lead.max(1).min(first.len());
    let order = first[..lead]
        .iter()
        .chain(later.iter().filter_map(|list| list.first()))
        .chain(&first[lead..])
        .chain(later.iter().flat_map(|list| list.iter().skip(1)));
    // One list fused with itself keeps its order and merges its duplicates.
    dedup_and_fuse([order], RRF_K)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn hit(id: &str, url: Option<&str>) -> Hit {
        let mut h = Hit::new(id, id, "text", 1.0, "b");
        h.url = url.map(str::to_owned);
        h
    }

    #[test]
    fn hits_found_by_several_queries_rise_and_duplicates_merge() {
        let a = vec![hit("x", None), hit("y", None)];
        let b = vec![hit("y", None), hit("z", Some("https://e.com/z#top"))];
        let c = vec![hit("z-copy", Some("https://E.com/z"))];
        let fused = dedup_and_fuse(&[a, b, c], RRF_K);
        let ids: Vec<_> = fused.iter().map(|h| h.id.0.as_str()).collect();
        assert_eq!(ids, ["y", "z", "x"]);
    }

    #[test]
    fn each_lists_head_comes_first_then_the_rest_in_list_order() {
        let first = vec![
            hit("a", None),
            hit("b", None),
            hit("shared", None),
            hit("c", None),
        ];
        let hop = vec![hit("target", None), hit("hop-2", None), hit("shared", None)];
        let ids: Vec<_> = dedup_heads_first(&[first.clone(), hop.clone()], 1)
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        assert_eq!(ids, ["a", "target", "b", "shared", "c", "hop-2"]);
        let led: Vec<_> = dedup_heads_first(&[first.clone(), hop.clone()], 2)
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        assert_eq!(led, ["a", "b", "target", "shared", "c", "hop-2"]);
        let summed: Vec<_> = dedup_and_fuse(&[first, hop], RRF_K)
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        assert_eq!(summed[0], "shared", "summing lifts what both lists found");
    }

    #[test]
    fn equal_ids_from_different_backends_are_different_documents() {
        let mut other = hit("x", None);
        other.backend = "other".into();
        let fused = dedup_and_fuse(&[vec![hit("x", None)], vec![other]], RRF_K);
        assert_eq!(fused.len(), 2);
    }

    #[test]
    fn a_result_listed_twice_in_one_list_counts_once() {
        let twice = vec![
            hit("a", Some("https://e.com/a")),
            hit("a-mirror", Some("https://e.com/a/")),
            hit("b", None),
        ];
        let fused = dedup_and_fuse(&[twice], RRF_K);
        assert_eq!(fused.len(), 2);
        assert!((fused[0].score - 1.0 / (RRF_K + 1.0)).abs() < 1e-9);
    }

    #[test]
    fn one_list_keeps_its_order() {
        let list: Vec<_> = ["c", "a", "b"].iter().map(|id| hit(id, None)).collect();
        let ids: Vec<_> = dedup_and_fuse(&[list], RRF_K)
            .into_iter()
            .map(|h| h.id.0)
            .collect();
        assert_eq!(ids, ["c", "a", "b"]);
    }

    proptest! {
        #[test]
        fn fused_ids_are_unique_and_nothing_is_lost(lists in proptest::collection::vec(proptest::collection::vec(0u8..20, 0..15), 0..5)) {
            let lists: Vec<Vec<Hit>> = lists.iter().map(|l| l.iter().map(|i| hit(&i.to_string(), None)).collect()).collect();
            let fused = dedup_and_fuse(&lists, RRF_K);
            let mut ids: Vec<_> = fused.iter().map(|h| h.id.clone()).collect();
            let before = ids.len();
            ids.sort();
            ids.dedup();
            prop_assert_eq!(before, ids.len());
            let mut expected: Vec<_> = lists.iter().flatten().map(|h| h.id.clone()).collect();
            expected.sort();
            expected.dedup();
            prop_assert_eq!(ids, expected);
            prop_assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
        }
    }
}
