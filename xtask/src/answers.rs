//! `cargo xtask eval --mode answer`: what the user reads, measured, with the heuristics and with
//! a model side by side. The whole pipeline answers each question; the report gives, overall and
//! per question type, the documents found (every relevant one in the top 2, 5 and 10, and
//! nDCG@10), whether the citations point at relevant documents, and, for queries that carry
//! `metadata.answer`, how often the answer holds the gold answer and the short answer's exact
//! match and token F1 (HotpotQA's answer metrics); then what it cost (seconds, tokens and model
//! requests per question) and, per stage, how the model's calls ended.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use ferret::config::NameRanking;
use ferret::jobs::search::ResponseType;
use ferret::models::{LocalEmbedder, Stage, StageModelConfig};
use ferret::Response;
use serde::Serialize;

use crate::agentic::{stage_table, tally_stage_calls, LlmChoice, StageCalls};

/// The inputs of one answer report.
pub(crate) struct AnswerRun<'a> {
    pub name: &'a str,
    pub queries: &'a [(String, String)],
    pub qrels: &'a HashMap<String, HashMap<String, f64>>,
    /// Gold answer and question type, by query id; may be empty (retrieval and citations are
    /// still measured).
    pub gold: &'a HashMap<String, GoldAnswer>,
    pub llm: LlmChoice,
    /// Stages that keep their heuristic in the model pipeline.
    pub heuristic_stages: BTreeSet<Stage>,
    pub wall_time: Duration,
    pub out: &'a Path,
    pub report: &'a str,
    /// Where to write the questions whose answer misses the gold answer or cites a document
    /// that is not relevant, as JSONL.
    pub misses: Option<&'a Path>,
}

/// What a query's metadata says its answer is.
pub(crate) struct GoldAnswer {
    pub answer: String,
    pub kind: String,
}

/// The gold answers of the queries in `path` that carry `metadata.answer`.
pub(crate) fn read_gold_answers(path: &Path) -> anyhow::Result<HashMap<String, GoldAnswer>> {
    let mut gold = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)?;
        if let (Some(id), Some(answer)) = (v["_id"].as_str(), v["metadata"]["answer"].as_str()) {
            let kind = v["metadata"]["type"].as_str().unwrap_or("all").to_owned();
            gold.insert(
                id.to_owned(),
                GoldAnswer {
                    answer: answer.to_owned(),
                    kind,
                },
            );
        }
    }
    Ok(gold)
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    documents: usize,
    /// Whether the queries carry gold answers (else the answer columns are left out).
    gold_answers: bool,
    rows: Vec<Row>,
    command: String,
}

/// One pipeline's figures: overall and per question type, and how its model calls ended.
#[derive(Serialize)]
struct Row {
    pipeline: String,
    model: Option<String>,
    by_type: BTreeMap<String, Figures>,
    stages: BTreeMap<String, StageCalls>,
}

/// The depths at which "every relevant document found" is counted.
const DEPTHS: [usize; 3] = [2, 5, 10];

#[derive(Serialize, Default, Clone)]
struct Figures {
    questions: usize,
    /// Questions with every relevant document in the top 2, 5 and 10 hits.
    all_found_at: [f64; 3],
    ndcg_at_10: f64,
    /// Answers whose text or short answer holds the gold answer, normalised.
    contains_gold: f64,
    /// Short answers equal to the gold answer, normalised.
    short_exact: f64,
    /// Token F1 of the short answer against the gold answer.
    short_f1: f64,
    /// Questions given a short answer.
    short_given: f64,
    /// Words of the answer text (markers and short answer excluded), over answered questions.
    mean_words: f64,
    /// Citations pointing at a relevant document, over all citations.
    citation_precision: f64,
    /// Answered questions citing at least one document that is not relevant.
    citing_irrelevant: f64,
    /// Questions given a message instead of an answer.
    messages: f64,
    seconds_per_question: f64,
    tokens_per_question: f64,
    model_requests_per_question: f64,
}

/// One question's measurements.
#[derive(Default, Clone, Copy)]
struct Scored {
    has_gold: bool,
    all_found_at: [bool; 3],
    ndcg: f64,
    tokens: u64,
    model_requests: u32,
    contains: bool,
    exact: bool,
    f1: f64,
    short_given: bool,
    answered: bool,
    words: usize,
    citations: usize,
    relevant_citations: usize,
    seconds: f64,
}

pub(crate) fn run(
    run: &AnswerRun<'_>,
    dir: &Path,
    documents: usize,
    embedder: Option<LocalEmbedder>,
) -> anyhow::Result<()> {
    let mut pipelines = vec![("heuristic".to_owned(), None)];
    if let Some(model) = run.llm.model()? {
        pipelines.push(("model".to_owned(), Some(model)));
    }
    let mut rows = Vec::new();
    for (label, model) in pipelines {
        let model_name = model.as_ref().map(|m| {
            let names: Vec<&str> = run.heuristic_stages.iter().map(|s| s.name()).collect();
            match names.is_empty() {
                true => m.name().to_owned(),
                false => format!("{}; heuristic {}", m.name(), names.join(", ")),
            }
        });
        let stages = StageModelConfig {
            heuristic_stages: run.heuristic_stages.clone(),
            ..StageModelConfig::default()
        };
        let (ferret, runtime) = crate::agentic::pipeline(
            dir,
            None,
            embedder.clone(),
            model.map(|m| (m, stages)),
            NameRanking::Rules,
        )?;
        let mut scored: Vec<(String, Scored)> = Vec::new();
        let mut stages = BTreeMap::new();
        let mut misses = String::new();
        for (i, (id, text)) in run.queries.iter().enumerate() {
            let gold = run.gold.get(id);
            let started = Instant::now();
            let response =
                runtime.block_on(ferret.search(crate::agentic::question(text, run.wall_time)?))?;
            let gold_answer = gold.map(|g| g.answer.as_str());
            let mut one = score(&response, gold_answer, &run.qrels[id]);
            one.seconds = started.elapsed().as_secs_f64();
            let marks = tally_stage_calls(&response, &mut stages);
            if model_name.is_some() {
                eprintln!(
                    "{label} {}/{}: {:.1}s, {} tokens;{marks}",
                    i + 1,
                    run.queries.len(),
                    one.seconds,
                    one.tokens
                );
            }
            let cites_irrelevant = one.relevant_citations < one.citations;
            if (gold.is_some() && !one.contains) || cites_irrelevant {
                let line = serde_json::json!({
                    "misses": !one.contains,
                    "cites_irrelevant": cites_irrelevant,
                    "cited": response.citations.iter().map(|c| &c.hit_id.0).collect::<Vec<_>>(),
                    "id": id,
                    "type": gold.map(|g| &g.kind),
                    "question": text,
                    "gold": gold_answer,
                    "answer": response.answer,
                    "short": response.short_answer.as_ref().map(|s| &s.text),
                    "hits": response.hits.iter().take(4).map(|h| format!("{} {}", h.id.0, h.title)).collect::<Vec<_>>(),
                    "relevant": run.qrels[id].keys().collect::<Vec<_>>(),
                });
                misses += &format!("{line}\n");
            }
            let kind = gold.map_or_else(|| "no gold answer".to_owned(), |g| g.kind.clone());
            scored.push((kind, one));
        }
        if let Some(path) = run.misses {
            std::fs::write(path.with_extension(format!("{label}.jsonl")), &misses)?;
        }
        let mut by_type = BTreeMap::new();
        by_type.insert("all".to_owned(), summarise(scored.iter().map(|(_, s)| s)));
        let kinds: std::collections::BTreeSet<&String> = scored.iter().map(|(k, _)| k).collect();
        // A set whose queries are all of one kind needs no row per kind.
        if kinds.len() > 1 {
            for kind in kinds {
                let of_kind = scored.iter().filter(|(k, _)| k == kind).map(|(_, s)| s);
                by_type.insert(kind.clone(), summarise(of_kind));
            }
        }
        let row = Row {
            pipeline: label,
            model: model_name,
            by_type,
            stages,
        };
        println!("{}", line(&row));
        rows.push(row);
    }
    let report = Report {
        dataset: run.name.to_owned(),
        documents,
        gold_answers: !run.gold.is_empty(),
        rows,
        command: crate::report::command_line(),
    };
    let markdown = render(&report);
    print!("{markdown}");
    crate::report::write_report(
        &run.out.join(format!("{}-answers", run.report)),
        &report,
        &markdown,
    )
}

/// How `response` answers a question whose gold answer is `gold` (when known) and whose
/// relevant documents are `relevant`.
fn score(response: &Response, gold: Option<&str>, relevant: &HashMap<String, f64>) -> Scored {
    let ranked: Vec<&str> = response.hits.iter().map(|h| h.id.0.as_str()).collect();
    let all_found_at = DEPTHS.map(|k| {
        relevant
            .iter()
            .filter(|(_, &grade)| grade > 0.0)
            .all(|(doc, _)| ranked.iter().take(k).any(|r| r == doc))
    });
    let answered = response.response_type == ResponseType::Results && response.answer.is_some();
    let text = response.answer.as_deref().unwrap_or_default();
    let short = response.short_answer.as_ref().map(|s| s.text.as_str());
    let read_together = format!("{} {}", without_markers(text), short.unwrap_or_default());
    let citations = if answered {
        response.citations.len()
    } else {
        0
    };
    let relevant_citations = if answered {
        response
            .citations
            .iter()
            .filter(|c| relevant.get(&c.hit_id.0).is_some_and(|&grade| grade > 0.0))
            .count()
    } else {
        0
    };
    let has_gold = gold.is_some();
    let gold = gold.unwrap_or_default();
    Scored {
        has_gold,
        all_found_at,
        ndcg: crate::judged::ndcg_at(&ranked, relevant, 10),
        tokens: response.usage.prompt_tokens + response.usage.completion_tokens,
        model_requests: response.usage.llm_calls,
        contains: contains_answer(&read_together, gold),
        exact: short.is_some_and(|s| normalize(s) == normalize(gold)),
        f1: short.map_or(0.0, |s| token_f1(s, gold)),
        short_given: short.is_some(),
        answered,
        words: if answered {
            without_markers(text).split_whitespace().count()
        } else {
            0
        },
        citations,
        relevant_citations,
        seconds: 0.0,
    }
}

fn summarise<'a>(scored: impl Iterator<Item = &'a Scored>) -> Figures {
    let all: Vec<&Scored> = scored.collect();
    let n = all.len().max(1) as f64;
    let share = |f: fn(&Scored) -> bool| all.iter().filter(|s| f(s)).count() as f64 / n;
    let answered: Vec<&&Scored> = all.iter().filter(|s| s.answered).collect();
    let citations: usize = all.iter().map(|s| s.citations).sum();
    let relevant: usize = all.iter().map(|s| s.relevant_citations).sum();
    Figures {
        questions: all.len(),
        all_found_at: [0, 1, 2].map(|d| share_at(&all, d)),
        ndcg_at_10: all.iter().map(|s| s.ndcg).sum::<f64>() / n,
        tokens_per_question: all.iter().map(|s| s.tokens as f64).sum::<f64>() / n,
        model_requests_per_question: all.iter().map(|s| f64::from(s.model_requests)).sum::<f64>()
            / n,
        // Over the questions that have a gold answer.
        contains_gold: gold_share(&all, |s| s.contains),
        short_exact: gold_share(&all, |s| s.exact),
        short_f1: all.iter().filter(|s| s.has_gold).map(|s| s.f1).sum::<f64>()
            / all.iter().filter(|s| s.has_gold).count().max(1) as f64,
        short_given: share(|s| s.short_given),
        mean_words: answered.iter().map(|s| s.words as f64).sum::<f64>()
            / answered.len().max(1) as f64,
        citation_precision: relevant as f64 / citations.max(1) as f64,
        citing_irrelevant: answered
            .iter()
            .filter(|s| s.relevant_citations < s.citations)
            .count() as f64
            / answered.len().max(1) as f64,
        messages: share(|s| !s.answered),
        seconds_per_question: all.iter().map(|s| s.seconds).sum::<f64>() / n,
    }
}

/// Share of the questions of `all` that have a gold answer for which `f` holds.
fn gold_share(all: &[&Scored], f: fn(&Scored) -> bool) -> f64 {
    let with_gold: Vec<&&Scored> = all.iter().filter(|s| s.has_gold).collect();
    with_gold.iter().filter(|s| f(s)).count() as f64 / with_gold.len().max(1) as f64
}

/// Share of `all` with every relevant document within the `depth`-th of [`DEPTHS`].
fn share_at(all: &[&Scored], depth: usize) -> f64 {
    all.iter().filter(|s| s.all_found_at[depth]).count() as f64 / all.len().max(1) as f64
}

/// `text` without its `[n]` / `[n, m]` markers.
fn without_markers(text: &str) -> String {
    let marker = regex::Regex::new(r"\s*\[\d+(?:,\s*\d+)*\]").expect("valid pattern");
    marker.replace_all(text, "").into_owned()
}

/// HotpotQA's answer normalisation: lower case, no punctuation, no articles, single spaces.
fn normalize(text: &str) -> String {
    let lower = text.to_lowercase();
    let no_punctuation: String = lower
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c.is_whitespace() {
                c
            } else {
                ' '
            }
        })
        .collect();
    no_punctuation
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Does `text` hold `gold` as whole words, both normalised?
fn contains_answer(text: &str, gold: &str) -> bool {
    let gold = normalize(gold);
    !gold.is_empty() && format!(" {} ", normalize(text)).contains(&format!(" {gold} "))
}

/// HotpotQA's token F1: overlap of the normalised tokens; a yes/no gold answer needs an exact match.
fn token_f1(prediction: &str, gold: &str) -> f64 {
    let (prediction, gold) = (normalize(prediction), normalize(gold));
    let special = ["yes", "no", "noanswer"];
    if (special.contains(&prediction.as_str()) || special.contains(&gold.as_str()))
        && prediction != gold
    {
        return 0.0;
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for token in gold.split_whitespace() {
        *counts.entry(token).or_default() += 1;
    }
    let mut common = 0;
    for token in prediction.split_whitespace() {
        if let Some(count) = counts.get_mut(token) {
            if *count > 0 {
                *count -= 1;
                common += 1;
            }
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / prediction.split_whitespace().count() as f64;
    let recall = common as f64 / gold.split_whitespace().count() as f64;
    2.0 * precision * recall / (precision + recall)
}

fn line(row: &Row) -> String {
    let all = &row.by_type["all"];
    format!(
        "answer ({}): all@5 {:.3}, nDCG@10 {:.4}, contains gold {:.3}, short EM {:.3} F1 {:.3}, {:.1} words, citation precision {:.3}, citing irrelevant {:.3}, {:.1} s/q",
        row.pipeline,
        all.all_found_at[1],
        all.ndcg_at_10,
        all.contains_gold,
        all.short_exact,
        all.short_f1,
        all.mean_words,
        all.citation_precision,
        all.citing_irrelevant,
        all.seconds_per_question
    )
}

fn render(report: &Report) -> String {
    let mut md = format!(
        "# {}: answers, heuristics and model\n\nGenerated by `{}`: {} documents. Each question is \
         answered by the whole pipeline, as `Ferret::search` answers it, once with the heuristic \
         stages and once with the model's.\n\n\
         - **all@k**: questions with every relevant document in the top k hits; **nDCG**: nDCG@10 \
         of the hits.\n",
        report.dataset, report.command, report.documents
    );
    if report.gold_answers {
        md.push_str(
            "- **contains**: the answer text and short answer, read together, hold the gold answer \
             (normalised: case, punctuation, articles).\n\
             - **EM / F1**: the short answer against the gold answer (HotpotQA's metrics; none given \
             scores 0). **short**: share of questions given one.\n",
        );
    }
    md.push_str(
        "- **words**: mean words of the answer text, markers and short answer excluded.\n\
         - **cit. prec.**: citations pointing at a relevant document, over all citations. \
         **cites irrelevant**: answers citing at least one document that is not relevant.\n\
         - **messages**: questions given a message instead of an answer.\n\
         - **tokens/q**, **requests/q**: model tokens (prompt and completion) and model requests \
         per question.\n\n",
    );
    let answer_columns = if report.gold_answers {
        " contains | EM | F1 | short |"
    } else {
        ""
    };
    let answer_rule = if report.gold_answers {
        "---|---|---|---|"
    } else {
        ""
    };
    md.push_str(&format!(
        "| pipeline | type | questions | all@2 | all@5 | all@10 | nDCG |{answer_columns} words | cit. prec. | cites irrelevant | messages | s/q | tokens/q | requests/q |\n\
         |---|---|---|---|---|---|---|{answer_rule}---|---|---|---|---|---|---|\n"
    ));
    for row in &report.rows {
        let name = match &row.model {
            Some(model) => format!("{} ({model})", row.pipeline),
            None => row.pipeline.clone(),
        };
        for (kind, f) in &row.by_type {
            let answers = if report.gold_answers {
                format!(
                    " {:.3} | {:.3} | {:.3} | {:.3} |",
                    f.contains_gold, f.short_exact, f.short_f1, f.short_given
                )
            } else {
                String::new()
            };
            md.push_str(&format!(
                "| {name} | {kind} | {} | {:.3} | {:.3} | {:.3} | {:.4} |{answers} {:.1} | {:.3} | {:.3} | {:.3} | {:.2} | {:.0} | {:.1} |\n",
                f.questions,
                f.all_found_at[0],
                f.all_found_at[1],
                f.all_found_at[2],
                f.ndcg_at_10,
                f.mean_words,
                f.citation_precision,
                f.citing_irrelevant,
                f.messages,
                f.seconds_per_question,
                f.tokens_per_question,
                f.model_requests_per_question,
            ));
        }
    }
    for row in report.rows.iter().filter(|r| !r.stages.is_empty()) {
        md.push_str(&format!(
            "\n## How {}'s calls ended, by stage\n\nAccepted: the reply parsed and the stage's \
             own checks let it through, so its answer was used. Refused: it parsed, the checks \
             said no. Failed: no reply parsed. Both fall back to the heuristic.\n\n",
            row.model.as_deref().unwrap_or(&row.pipeline)
        ));
        md.push_str(&stage_table(&row.stages));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_compared_as_hotpotqa_compares_them() {
        assert_eq!(
            normalize("The Moscow-State  University!"),
            "moscow state university"
        );
        assert!(contains_answer("It was founded in 1755 [1].", "1755"));
        assert!(!contains_answer("It was founded in 17550.", "1755"));
        assert!(contains_answer("yes", "Yes"));
        assert_eq!(
            token_f1("Moscow State University", "Moscow State University"),
            1.0
        );
        assert!((token_f1("State University", "Moscow State University") - 0.8).abs() < 1e-9);
        assert_eq!(token_f1("no", "yes"), 0.0);
        assert_eq!(token_f1("yes", "yes"), 1.0);
        assert_eq!(without_markers("One [1]. Two [2, 3]."), "One. Two.");
    }
}
