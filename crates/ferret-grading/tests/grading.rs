//! The grader through its public API: thresholds, quality classes, suggestions, order, robustness.

use ferret_core::{Hit, Implementation};
use ferret_grading::{
    grades_from_judgements, heuristic_relevance, GradingConfig, HeuristicGrader, Judgement,
    Quality, RelevanceGrader, RetryStrategy,
};
use proptest::prelude::*;

fn hit(id: &str, title: &str, text: &str, score: f32) -> Hit {
    Hit::new(id, title, text, score, "test")
}

fn judged(relevances: &[f32]) -> (Vec<Hit>, Vec<Judgement>) {
    let hits = (0..relevances.len())
        .map(|i| hit(&format!("h{i}"), "", "", 1.0))
        .collect();
    let judgements = relevances
        .iter()
        .map(|&relevance| Judgement {
            relevance,
            reason: String::new(),
        })
        .collect();
    (hits, judgements)
}

#[test]
fn thresholds_are_inclusive_at_0_3_and_0_4() {
    let (hits, judgements) = judged(&[0.29, 0.3, 0.39, 0.4]);
    let g = grades_from_judgements(&GradingConfig::default(), "batik", &hits, judgements);
    let flags: Vec<(bool, bool)> = g.per_hit.iter().map(|h| (h.kept, h.good)).collect();
    assert_eq!(
        flags,
        [(false, false), (true, false), (true, false), (true, true)]
    );
    assert_eq!((g.kept(), g.good()), (3, 1));
}

#[tokio::test]
async fn heuristic_thresholds_follow_the_config() {
    let hits = [hit(
        "a",
        "Batik",
        "Batik cloth from Java, dyed with wax.",
        1.0,
    )];
    let question = "Kelantan batik cloth motifs";
    let r = heuristic_relevance(question, &hits)[0].relevance;
    assert!(r > 0.0 && r < 1.0, "{r}");
    let at = HeuristicGrader::new(GradingConfig {
        keep_threshold: r,
        good_threshold: r,
        min_good_hits: 1,
    });
    let g = at.grade(question, &hits).await.value;
    assert!(g.per_hit[0].kept && g.per_hit[0].good);
    let above = next_up(r);
    let just_above = HeuristicGrader::new(GradingConfig {
        keep_threshold: above,
        good_threshold: above,
        min_good_hits: 1,
    });
    let g = just_above.grade(question, &hits).await.value;
    assert!(!g.per_hit[0].kept && !g.per_hit[0].good);
    assert_eq!(g.quality, Quality::Low);
}

fn next_up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}

#[test]
fn quality_classes() {
    let c = GradingConfig::default();
    let quality = |rs: &[f32]| {
        let (hits, j) = judged(rs);
        grades_from_judgements(&c, "batik", &hits, j).quality
    };
    assert_eq!(quality(&[]), Quality::Low);
    assert_eq!(
        quality(&[0.35, 0.2, 0.1]),
        Quality::Low,
        "kept but none good"
    );
    assert_eq!(quality(&[0.5, 0.2]), Quality::Medium);
    assert_eq!(quality(&[0.5, 0.45, 0.2]), Quality::Medium);
    assert_eq!(
        quality(&[0.5, 0.45, 0.41]),
        Quality::High,
        "three good hits"
    );
    assert_eq!(
        quality(&[0.75, 0.1]),
        Quality::High,
        "one hit answers outright"
    );
    assert_eq!(quality(&[0.74, 0.1]), Quality::Medium);

    let strict = GradingConfig {
        min_good_hits: 2,
        ..c
    };
    let (hits, j) = judged(&[0.9, 0.2]);
    assert_eq!(
        grades_from_judgements(&strict, "batik", &hits, j).quality,
        Quality::Low,
        "one good hit of two needed"
    );
    let (hits, j) = judged(&[0.5, 0.5, 0.1]);
    assert_eq!(
        grades_from_judgements(&strict, "batik", &hits, j).quality,
        Quality::Medium
    );
}

#[test]
fn retry_exactly_when_quality_is_low() {
    for rs in [
        &[][..],
        &[0.1][..],
        &[0.35, 0.35][..],
        &[0.5][..],
        &[0.9, 0.9, 0.9][..],
    ] {
        let (hits, j) = judged(rs);
        let g = grades_from_judgements(&GradingConfig::default(), "Kelantan batik", &hits, j);
        assert_eq!(g.should_retry, g.quality == Quality::Low, "{rs:?}");
        if !g.should_retry {
            assert_eq!(g.suggestion, None);
        }
    }
}

#[tokio::test]
async fn no_hits_means_low_quality_and_a_broader_query() {
    let out = HeuristicGrader::default()
        .grade("traditional Kelantan batik textiles from 1950", &[])
        .await;
    assert!(matches!(
        out.implementation,
        Implementation::Heuristic { .. }
    ));
    let g = out.value;
    assert_eq!((g.quality, g.should_retry), (Quality::Low, true));
    let s = g.suggestion.clone().expect("a broader query");
    assert_eq!(s.strategy, RetryStrategy::Broaden);
    assert_eq!(s.query, "traditional Kelantan batik textiles");
    assert_eq!(
        s.to_string(),
        "broaden: traditional Kelantan batik textiles"
    );
    let step = serde_json::to_value(g.trace_step(2, Implementation::heuristic_default())).unwrap();
    assert_eq!(step["stage"], "grading");
    assert_eq!(
        (step["attempt"].as_u64(), step["graded"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(
        step["retry_suggestion"],
        "broaden: traditional Kelantan batik textiles"
    );
}

#[tokio::test]
async fn loosely_matching_hits_mean_a_narrower_query() {
    // Every hit is about traditional batik, none about Kelantan textiles: kept, not good.
    let hits = [
        hit(
            "a",
            "Javanese batik",
            "Traditional batik is a wax-resist dyeing technique from Java.",
            3.0,
        ),
        hit(
            "b",
            "Batik shirts",
            "Traditional batik shirts are worn on Fridays.",
            3.0,
        ),
        hit(
            "c",
            "Batik history",
            "The word batik is Javanese; the craft is traditional.",
            3.0,
        ),
    ];
    let g = HeuristicGrader::default()
        .grade("traditional Kelantan batik textiles", &hits)
        .await
        .value;
    assert!(
        g.per_hit.iter().all(|h| h.kept && !h.good),
        "{:?}",
        g.per_hit
    );
    assert_eq!(g.quality, Quality::Low);
    let s = g.suggestion.expect("a narrower query");
    assert_eq!(s.strategy, RetryStrategy::Narrow);
    assert_eq!(s.query, "traditional \"Kelantan\" batik \"textiles\"");
}

#[tokio::test]
async fn mostly_off_topic_hits_mean_a_broader_query_without_a_word_no_hit_contains() {
    let hits = [
        hit("a", "Weather today", "Rain in Kota Bharu.", 9.0),
        hit("b", "Rice recipes", "Cook rice with coconut milk.", 8.0),
        hit(
            "c",
            "Batik motifs",
            "Batik motifs are dyed into cloth.",
            1.0,
        ),
    ];
    let g = HeuristicGrader::default()
        .grade("Kelantan batik motifs", &hits)
        .await
        .value;
    assert_eq!(g.kept(), 1);
    assert_eq!(g.good(), 1, "{:?}", g.per_hit);
    assert_eq!(g.quality, Quality::Medium);

    let g = HeuristicGrader::default()
        .grade("Kelantan songket motifs", &hits)
        .await
        .value;
    assert_eq!((g.kept(), g.quality), (0, Quality::Low));
    let s = g.suggestion.unwrap();
    assert_eq!(
        (s.strategy, s.query.as_str()),
        (RetryStrategy::Broaden, "songket motifs")
    );
}

#[tokio::test]
async fn a_hit_covering_the_question_is_high_quality() {
    let hits = [
        hit(
            "a",
            "Batik",
            "Batik of Kelantan uses bold floral motifs.",
            0.016,
        ),
        hit("b", "Other", "Unrelated text.", 0.033),
    ];
    let g = HeuristicGrader::default()
        .grade("Kelantan batik motifs", &hits)
        .await
        .value;
    assert_eq!(g.quality, Quality::High, "{:?}", g.per_hit);
    assert!(!g.should_retry && g.suggestion.is_none());
}

#[tokio::test]
async fn grades_keep_the_order_of_the_hits() {
    let hits: Vec<Hit> = ["z", "a", "m", "b"]
        .iter()
        .enumerate()
        .map(|(i, id)| hit(id, "t", "batik", i as f32))
        .collect();
    let g = HeuristicGrader::default().grade("batik", &hits).await.value;
    let ids: Vec<&str> = g.per_hit.iter().map(|h| h.hit_id.0.as_str()).collect();
    assert_eq!(ids, ["z", "a", "m", "b"]);
}

#[test]
fn short_or_bad_judgement_lists_are_sanitised() {
    let (hits, _) = judged(&[0.0, 0.0, 0.0]);
    let j = vec![
        Judgement {
            relevance: f32::NAN,
            reason: "nan".into(),
        },
        Judgement {
            relevance: 7.0,
            reason: "big".into(),
        },
    ];
    let g = grades_from_judgements(&GradingConfig::default(), "batik", &hits, j);
    let r: Vec<f32> = g.per_hit.iter().map(|h| h.relevance).collect();
    assert_eq!(r, [0.0, 1.0, 0.0]);
    assert_eq!(g.per_hit[2].reason, "not graded");
}

#[test]
fn grades_serialize_in_their_documented_shape() {
    let (hits, j) = judged(&[0.1]);
    let g = grades_from_judgements(
        &GradingConfig::default(),
        "old \"Kelantan batik\"",
        &hits,
        j,
    );
    let v = serde_json::to_value(&g).unwrap();
    assert_eq!(v["quality"], "low");
    assert_eq!(v["should_retry"], true);
    assert_eq!(v["suggestion"]["strategy"], "broaden");
    assert_eq!(v["suggestion"]["query"], "old Kelantan batik");
}

fn any_score() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>(),
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        -1e6f32..1e6
    ]
}

proptest! {
    #[test]
    fn relevance_is_in_unit_range_and_never_nan(
        question in ".{0,80}",
        docs in proptest::collection::vec((".{0,40}", ".{0,200}", any_score()), 0..8),
    ) {
        let hits: Vec<Hit> = docs.iter().enumerate().map(|(i, (t, x, s))| hit(&i.to_string(), t, x, *s)).collect();
        let g = HeuristicGrader::default().grade_now(&question, &hits);
        prop_assert_eq!(g.per_hit.len(), hits.len());
        for (h, grade) in hits.iter().zip(&g.per_hit) {
            prop_assert_eq!(&h.id, &grade.hit_id);
            prop_assert!((0.0..=1.0).contains(&grade.relevance), "{}", grade.relevance);
            prop_assert!(!grade.good || grade.kept);
        }
        prop_assert_eq!(g.should_retry, g.quality == Quality::Low);
        if let Some(s) = &g.suggestion {
            prop_assert!(!s.query.trim().is_empty());
            prop_assert_ne!(s.query.trim(), question.trim());
        }
    }

    #[test]
    fn suggestions_from_wordy_questions_are_never_the_question(
        words in proptest::collection::vec("(the|of|\"|1999|v2|[A-Z][a-z]{2,8}|[a-z]{2,9})", 0..8),
        hit_texts in proptest::collection::vec("[a-z ]{0,60}", 0..5),
    ) {
        let question = words.join(" ");
        let hits: Vec<Hit> = hit_texts.iter().enumerate().map(|(i, t)| hit(&i.to_string(), "", t, i as f32)).collect();
        let g = HeuristicGrader::default().grade_now(&question, &hits);
        if let Some(s) = g.suggestion {
            prop_assert!(!s.query.trim().is_empty());
            prop_assert_ne!(ferret_core::text::content_terms(&s.query).join(" ") + &s.query.matches('"').count().to_string(),
                ferret_core::text::content_terms(&question).join(" ") + &question.matches('"').count().to_string());
        }
    }
}
