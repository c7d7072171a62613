//! Long results are condensed before a prompt shows them: summarised by a model that writes
//! answers when the summary holds only what the result says, else cut to the passages about the
//! question; the trace counts both, and the summary calls are accounted like any other.

use std::collections::BTreeSet;
use std::sync::Arc;

use ferret_core::LlmCallOutcome;
use ferret_llm::{PromptSource, ScriptedModel, Stage, StageModel, StageModelConfig};

const QUESTION: &str = "Who played Corliss Archer in Kiss and Tell?";

/// A page longer than a prompt shows, and a short one.
fn sources() -> Vec<PromptSource> {
    let page = "Kiss and Tell is a 1945 American comedy film. It was shot in Hollywood. \
                The studio built new sets for it. Shirley Temple played Corliss Archer in the \
                film. Critics liked the music. The film earned two million dollars.";
    vec![
        PromptSource {
            number: 1,
            title: "Kiss and Tell (1945 film)".into(),
            text: page.into(),
            url: None,
        },
        PromptSource {
            number: 2,
            title: "Shirley Temple".into(),
            text: "An American actress.".into(),
            url: None,
        },
    ]
}

fn model(replies: &[&str], heuristic_stages: BTreeSet<Stage>) -> StageModel {
    StageModel::new(
        Arc::new(ScriptedModel::replying("scripted", replies)),
        StageModelConfig {
            source_chars: 120,
            heuristic_stages,
            ..StageModelConfig::default()
        },
    )
}

#[tokio::test]
async fn a_model_that_writes_answers_summarises_a_long_result() {
    let summary = "Shirley Temple played Corliss Archer in Kiss and Tell, a 1945 comedy film.";
    let reply = format!("{{\"summary\": \"{summary}\"}}");
    let mut shown = sources();
    let condensed = model(&[&reply], BTreeSet::new())
        .condense(QUESTION, &mut shown)
        .await;
    assert_eq!(shown[0].text, summary);
    assert_eq!(
        shown[1].text, "An American actress.",
        "a short result is left"
    );
    let note = condensed.condensation.expect("one result condensed");
    assert_eq!((note.sources, note.by_model), (1, 1));
    assert!(note.tokens_saved > 0);
    assert_eq!(condensed.calls.len(), 1);
    assert_eq!(condensed.calls[0].caller, "condensation");
    assert_eq!(condensed.calls[0].outcome, LlmCallOutcome::Parsed);
}

#[tokio::test]
async fn a_summary_that_adds_what_the_result_lacks_is_refused_for_the_extractive_cut() {
    let reply = r#"{"summary": "Judy Garland starred as Dorothy in a famous musical."}"#;
    let mut shown = sources();
    let condensed = model(&[reply], BTreeSet::new())
        .condense(QUESTION, &mut shown)
        .await;
    assert_eq!(
        shown[0].text,
        "Kiss and Tell is a 1945 American comedy film. … Shirley Temple played Corliss Archer in the film."
    );
    let note = condensed.condensation.expect("one result condensed");
    assert_eq!((note.sources, note.by_model), (1, 0));
    assert!(
        matches!(&condensed.calls[0].outcome, LlmCallOutcome::Refused { error } if error.contains("does not say")),
        "{:?}",
        condensed.calls[0].outcome
    );
}

#[tokio::test]
async fn with_the_stage_kept_heuristic_the_model_is_not_asked() {
    let mut shown = sources();
    let condensed = model(&[], BTreeSet::from([Stage::Condensation]))
        .condense(QUESTION, &mut shown)
        .await;
    assert!(condensed.calls.is_empty());
    let note = condensed.condensation.expect("cut instead");
    assert_eq!((note.sources, note.by_model), (1, 0));
    assert!(shown[0]
        .text
        .contains("Shirley Temple played Corliss Archer"));
}

#[tokio::test]
async fn a_summary_once_accepted_is_not_asked_for_again() {
    let summary = "Shirley Temple played Corliss Archer in Kiss and Tell, a 1945 comedy film.";
    let reply = format!("{{\"summary\": \"{summary}\"}}");
    // One reply only: a second request would find the script empty and fail.
    let model = model(&[&reply], BTreeSet::new());
    model.condense(QUESTION, &mut sources()).await;
    let mut again = sources();
    let condensed = model.condense(QUESTION, &mut again).await;
    assert_eq!(again[0].text, summary);
    assert!(condensed.calls.is_empty(), "{:?}", condensed.calls);
    assert_eq!(condensed.condensation.map(|c| c.by_model), Some(1));
}

#[test]
fn a_summary_is_refused_when_it_is_long_empty_of_substance_or_gives_numbers_the_result_lacks() {
    let page = "Kiss and Tell is a 1945 American comedy film. Shirley Temple played Corliss \
                Archer in the film. The film earned two million dollars at the box office.";
    let fine = "Shirley Temple played Corliss Archer in the 1945 film.";
    assert_eq!(
        ferret_llm::accept_summary(fine, page, 80).as_deref(),
        Ok(fine)
    );
    for (summary, why) in [
        (fine, "over 40"),
        ("It is not.", "nothing of substance"),
        (
            "Shirley Temple played Corliss Archer in the 1946 film.",
            "1946",
        ),
    ] {
        let max = if why == "over 40" { 40 } else { 80 };
        let error = ferret_llm::accept_summary(summary, page, max).unwrap_err();
        assert!(error.contains(why), "{summary}: {error}");
    }
}
