//! Judged sets (BEIR layout: queries, graded relevance) read, searched and scored as
//! pytrec_eval scores them.

use std::collections::{HashMap, HashSet};
use std::io::BufRead as _;
use std::path::Path;

use anyhow::{bail, Context as _};
use ferret::backends::SearchRequest;
use ferret::index::LocalIndex;
use ferret::jobs::search::RetrievalMode;
use ferret::models::LocalEmbedder;
use ferret::Filters;

pub(crate) fn read_queries(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), n + 1))?;
        let (Some(id), Some(text)) = (v["_id"].as_str(), v["text"].as_str()) else {
            bail!(
                "{}:{}: a query needs `_id` and `text`",
                path.display(),
                n + 1
            );
        };
        out.push((id.to_owned(), text.to_owned()));
    }
    Ok(out)
}

/// Query id to relevant document ids with their grades; grades of 0 are not relevant.
pub(crate) fn read_qrels(path: &Path) -> anyhow::Result<HashMap<String, HashMap<String, f64>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if n == 0 && cols.first() == Some(&"query-id") || line.trim().is_empty() {
            continue;
        }
        let [query, doc, grade] = cols[..] else {
            bail!(
                "{}:{}: expected `query-id<TAB>corpus-id<TAB>score`",
                path.display(),
                n + 1
            );
        };
        let grade: f64 = grade
            .trim()
            .parse()
            .with_context(|| format!("{}:{}: bad score", path.display(), n + 1))?;
        if grade > 0.0 {
            qrels
                .entry(query.to_owned())
                .or_default()
                .insert(doc.to_owned(), grade);
        }
    }
    Ok(qrels)
}

/// One search of `text` in `mode`, the query embedded by the uncached model as a new question
/// would be.
pub(crate) fn search_one(
    index: &LocalIndex,
    model: Option<&LocalEmbedder>,
    mode: RetrievalMode,
    text: &str,
    limit: usize,
) -> anyhow::Result<Vec<ferret_core::Hit>> {
    let vector = match (model, mode.needs_embeddings()) {
        (Some(m), true) => m.embed_blocking(&[text.to_owned()])?.pop(),
        _ => None,
    };
    let request = SearchRequest {
        query: text.to_owned(),
        limit,
        filters: Filters::default(),
        options: Default::default(),
        text_for: None,
    };
    Ok(index.search_blocking(&request, mode, vector.as_deref(), "local")?)
}

/// nDCG with linear gains, as pytrec_eval (and so BEIR) computes it.
pub(crate) fn ndcg_at(ranked: &[&str], relevant: &HashMap<String, f64>, k: usize) -> f64 {
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let mut seen = HashSet::new();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| seen.insert(**id))
        .map(|(i, id)| relevant.get(*id).copied().unwrap_or(0.0) * discount(i))
        .sum();
    let mut ideal: Vec<f64> = relevant.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| g * discount(i))
        .sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

pub(crate) fn recall_at(ranked: &[&str], relevant: &HashMap<String, f64>, k: usize) -> f64 {
    let found: HashSet<&str> = ranked
        .iter()
        .take(k)
        .copied()
        .filter(|id| relevant.contains_key(*id))
        .collect();
    found.len() as f64 / relevant.len().max(1) as f64
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(ids: &[&str]) -> HashMap<String, f64> {
        ids.iter().map(|id| (id.to_string(), 1.0)).collect()
    }

    #[test]
    fn ndcg_is_one_for_a_perfect_ranking_and_discounts_later_ranks() {
        assert!((ndcg_at(&["a", "b", "x"], &rel(&["a", "b"]), 10) - 1.0).abs() < 1e-12);
        let late = ndcg_at(&["x", "a"], &rel(&["a"]), 10);
        assert!((late - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(ndcg_at(&["x"], &rel(&["a"]), 10), 0.0);
    }

    #[test]
    fn recall_counts_the_share_of_relevant_documents_found() {
        assert_eq!(
            recall_at(&["a", "x", "b"], &rel(&["a", "b", "c", "d"]), 100),
            0.5
        );
        assert_eq!(recall_at(&["a", "b"], &rel(&["a", "b"]), 1), 0.5);
    }
}

/// One of two fixed halves of a query set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Half {
    Even,
    Odd,
}

impl Half {
    /// `even` or `odd`, as reports name the half.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Even => "even",
            Self::Odd => "odd",
        }
    }

    /// Does the query with this id belong to the half? The parity of its last character read as
    /// a hex digit (any other character: its code).
    pub(crate) fn holds(self, id: &str) -> bool {
        let last = id
            .chars()
            .last()
            .map_or(0, |c| c.to_digit(16).unwrap_or(c as u32));
        last.is_multiple_of(2) == (self == Self::Even)
    }
}
