//! Tests of `language`.

use super::*;
use proptest::prelude::*;

const TOOLS: &[&str] = &["Search", "Recent", "Lookup"];

fn parse(text: &str) -> Result<Plan, PlanError> {
    Plan::parse(text, TOOLS, 10)
}

fn step(variable: &str, tool: &str, argument: &str) -> PlanStep {
    PlanStep::new(variable, tool, argument, None)
}

const EXAMPLE: &str = "Plan: find who directed the film.
#E1 = Search[director of The Visit 2015 film]
Plan: find where that director was born.
#E2 = Search[birthplace of #E1]
#E3 = Search[#E1 #E2 awards]
";

#[test]
fn parses_the_example_into_steps_with_reasoning_and_dependencies() {
    let plan = parse(EXAMPLE).unwrap();
    let expected = vec![
        PlanStep {
            variable: "E1".into(),
            tool: "Search".into(),
            argument: "director of The Visit 2015 film".into(),
            reasoning: Some("find who directed the film.".into()),
            depends_on: vec![],
        },
        PlanStep {
            variable: "E2".into(),
            tool: "Search".into(),
            argument: "birthplace of #E1".into(),
            reasoning: Some("find where that director was born.".into()),
            depends_on: vec!["E1".into()],
        },
        PlanStep {
            variable: "E3".into(),
            tool: "Search".into(),
            argument: "#E1 #E2 awards".into(),
            reasoning: None,
            depends_on: vec!["E1".into(), "E2".into()],
        },
    ];
    assert_eq!(plan.steps, expected);
    assert_eq!(plan.waves(), vec![vec![0], vec![1], vec![2]]);
}

#[test]
fn tolerates_fences_prose_numbering_case_spacing_brackets_and_quotes() {
    let text = r#"Sure! Here is the plan you asked for:

```text
1. Plan: Find the director.
1. #E1=search["The Visit" (2015) director]
- Plan: Find films [2015] by that director.
- #e2   =   RECENT  [films [2015] by #e1]
2) **#E3** = Lookup['birthplace of #E1']
* `#E4 = Search[#E2 and #E3]`
Step 5: #E5 = Search[ "quoted whole" ]
```
Let me know if you need anything else."#;
    let plan = parse(text).unwrap();
    let got: Vec<(&str, &str, &str)> = plan
        .steps
        .iter()
        .map(|s| (s.variable.as_str(), s.tool.as_str(), s.argument.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("E1", "Search", r#""The Visit" (2015) director"#),
            ("E2", "Recent", "films [2015] by #e1"),
            ("E3", "Lookup", "birthplace of #E1"),
            ("E4", "Search", "#E2 and #E3"),
            ("E5", "Search", "quoted whole"),
        ]
    );
    assert_eq!(
        plan.steps[0].reasoning.as_deref(),
        Some("Find the director.")
    );
    assert_eq!(
        plan.steps[1].reasoning.as_deref(),
        Some("Find films [2015] by that director.")
    );
    assert_eq!(plan.steps[2].reasoning, None);
    assert_eq!(plan.steps[1].depends_on, vec!["E1".to_string()]);
    assert_eq!(
        plan.steps[3].depends_on,
        vec!["E2".to_string(), "E3".to_string()]
    );
    // The canonical text reads back to the same plan.
    assert_eq!(parse(&plan.render()).unwrap(), plan);
}

#[test]
fn a_plan_line_with_the_step_on_the_same_line_is_split() {
    let plan = parse("Plan: find the director. #E1 = Search[director of The Visit]").unwrap();
    assert_eq!(
        plan.steps[0].reasoning.as_deref(),
        Some("find the director.")
    );
    assert_eq!(plan.steps[0].argument, "director of The Visit");
    // Prose that merely mentions a variable stays reasoning.
    let plan = parse("Plan: let #E1 = the director\n#E1 = Search[x]").unwrap();
    assert_eq!(
        plan.steps[0].reasoning.as_deref(),
        Some("let #E1 = the director")
    );
}

#[test]
fn forward_references_are_allowed_without_a_cycle() {
    let plan = parse("#E1 = Search[#E2 films]\n#E2 = Search[director]").unwrap();
    assert_eq!(plan.waves(), vec![vec![1], vec![0]]);
}

#[test]
fn waves_of_a_diamond_run_the_middle_together() {
    let plan = parse(
        "#E1 = Search[a]\n#E2 = Search[b of #E1]\n#E3 = Recent[c of #E1]\n#E4 = Search[#E2 vs #E3]\n#E5 = Search[z]",
    )
    .unwrap();
    assert_eq!(plan.waves(), vec![vec![0, 4], vec![1, 2], vec![3]]);
}

#[test]
fn no_steps_is_empty() {
    assert_eq!(
        parse("I could not make a plan.\nPlan: think harder"),
        Err(PlanError::Empty)
    );
    assert_eq!(parse(""), Err(PlanError::Empty));
    assert!(PlanError::Empty
        .to_string()
        .contains("#E1 = Tool[argument]"));
}

#[test]
fn a_malformed_step_line_is_an_error_naming_the_line_and_step() {
    for (text, problem) in [
        ("#E1 = Search[a]\n#E2 Search[b]", "expected `=`"),
        (
            "#E1 = Search[a]\n#E2 = Search b",
            "expected `Tool[argument]`",
        ),
        ("#E1 = Search[a]\n#E2 = [b]", "tool name"),
        ("#E1 = Search[a]\n#E2 = Search[b", "closing `]`"),
    ] {
        let err = parse(text).unwrap_err();
        match &err {
            PlanError::Malformed { step, line, .. } => {
                assert_eq!((step.as_str(), *line), ("E2", 2), "{text}");
            }
            other => panic!("{text}: expected Malformed, got {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.contains("line 2") && message.contains("#E2"),
            "{message}"
        );
        assert!(message.contains(problem), "{message}");
    }
}

#[test]
fn duplicate_variable_names_the_step() {
    let err = parse("#E1 = Search[a]\n#E2 = Search[b]\n#E2 = Search[c]").unwrap_err();
    assert_eq!(err, PlanError::DuplicateVariable { step: "E2".into() });
    assert!(err.to_string().contains("#E2"));
}

#[test]
fn unknown_tool_names_the_step_and_lists_the_tools() {
    let err =
        Plan::parse("#E1 = Search[a]\n#E3 = Browse[x]", &["Search", "Recent"], 5).unwrap_err();
    assert_eq!(
        err,
        PlanError::UnknownTool {
            step: "E3".into(),
            tool: "Browse".into(),
            known: vec!["Search".into(), "Recent".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "step #E3 uses tool `Browse`, which is not one of: Search, Recent"
    );
}

#[test]
fn undefined_variable_names_the_step_and_the_variable() {
    let err = parse("#E1 = Search[a]\n#E2 = Search[b of #E1 and #E7]").unwrap_err();
    assert_eq!(
        err,
        PlanError::UndefinedVariable {
            step: "E2".into(),
            variable: "E7".into()
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("#E2") && message.contains("#E7"),
        "{message}"
    );
}

#[test]
fn a_step_using_its_own_result_is_a_cycle_of_one() {
    let err = parse("#E1 = Search[a]\n#E2 = Search[b of #E2]").unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle {
            steps: vec!["E2".into()]
        }
    );
    assert!(
        err.to_string().contains("step #E2 uses its own result"),
        "{err}"
    );
}

#[test]
fn a_dependency_cycle_lists_its_steps_in_order() {
    let err = parse("#E1 = Search[a]\n#E2 = Search[#E4]\n#E3 = Search[#E2]\n#E4 = Search[#E3 #E1]\n#E5 = Search[#E4]")
        .unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle {
            steps: vec!["E2".into(), "E4".into(), "E3".into()]
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("#E2 uses #E4, which uses #E3, which uses #E2"),
        "{message}"
    );
}

#[test]
fn too_many_steps_gives_the_count_and_the_limit() {
    let err = Plan::parse(EXAMPLE, TOOLS, 2).unwrap_err();
    assert_eq!(err, PlanError::TooManySteps { count: 3, max: 2 });
    assert!(err.to_string().contains("3 steps but at most 2"), "{err}");
}

#[test]
fn empty_argument_names_the_step() {
    for argument in ["", "   ", "\"\"", "' '"] {
        let err = parse(&format!("#E1 = Search[a]\n#E2 = Search[{argument}]")).unwrap_err();
        assert_eq!(
            err,
            PlanError::EmptyArgument { step: "E2".into() },
            "{argument:?}"
        );
        assert!(err.to_string().contains("#E2"));
    }
}

#[test]
fn substitute_matches_whole_references_only() {
    let results: HashMap<String, String> = [
        ("E1".to_string(), "M. Night Shyamalan".to_string()),
        ("E12".to_string(), "Pondicherry".to_string()),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        substitute("#E1 born in #E12", &results),
        "M. Night Shyamalan born in Pondicherry"
    );
    assert_eq!(
        substitute("#E1, #e1's #E2 #E123", &results),
        "M. Night Shyamalan, M. Night Shyamalan's #E2 #E123"
    );
    // Result text is not searched again.
    let nested: HashMap<String, String> = [
        ("E1".to_string(), "#E2".to_string()),
        ("E2".to_string(), "x".to_string()),
    ]
    .into_iter()
    .collect();
    assert_eq!(substitute("[#E1]", &nested), "[#E2]");
}

#[test]
fn render_quotes_an_argument_that_is_itself_quoted() {
    let plan = Plan {
        steps: vec![
            step("E1", "Search", "\"The Visit\""),
            step("E2", "Search", "'say \"hi\" to #E1'"),
        ],
    };
    assert!(plan.validate(TOOLS, 5).is_ok());
    let text = plan.render();
    assert_eq!(
        text,
        "#E1 = Search['\"The Visit\"']\n#E2 = Search[`'say \"hi\" to #E1'`]\n"
    );
    assert_eq!(parse(&text).unwrap(), plan);
}

/// A valid plan of 1..6 steps, each depending only on earlier ones.
fn valid_plan() -> impl Strategy<Value = Plan> {
    let word = prop_oneof![
        4 => "[A-Za-z0-9][A-Za-z0-9,.?-]{0,7}",
        1 => "[A-Za-z0-9\\[\\]()\"',.?-]{1,6}",
    ];
    let piece = (word, any::<prop::sample::Index>(), any::<bool>(), 0..4u8);
    let reasoning =
        proptest::option::of("[A-Za-z][A-Za-z0-9 ,.?'-]{0,30}".prop_map(|s| s.trim().to_string()));
    let raw_step = (
        prop::sample::select(TOOLS.to_vec()),
        prop::collection::vec(piece, 1..5),
        reasoning,
    );
    prop::collection::vec(raw_step, 1..6).prop_map(|raw| {
        let steps = raw
            .into_iter()
            .enumerate()
            .map(|(i, (tool, pieces, reasoning))| {
                let argument: Vec<String> = pieces
                    .into_iter()
                    .map(|(word, earlier, lower, kind)| {
                        if i > 0 && kind == 0 {
                            let e = if lower { 'e' } else { 'E' };
                            format!("#{e}{}", earlier.index(i) + 1)
                        } else {
                            word
                        }
                    })
                    .collect();
                PlanStep::new(format!("E{}", i + 1), tool, argument.join(" "), reasoning)
            })
            .collect();
        Plan { steps }
    })
}

/// Text that looks partly like a plan, to reach deeper into the parser than random strings.
fn plan_like_text() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "#E1", "#e2", "#E12", "#E", "#", "=", " = ", "[", "]", "\"", "'", "`", "```", "“", "”",
        "Plan:", "plan:", "1.", "- ", "**", "Search", "recent", "Browse", "Step 3:", "\n", "\r\n",
        " ", "x", "é", "日本",
    ]);
    prop::collection::vec(fragment, 0..40).prop_map(|f| f.concat())
}

proptest! {
    #[test]
    fn parse_never_panics_on_arbitrary_text(text in any::<String>()) {
        let _ = parse(&text);
    }

    #[test]
    fn parse_never_panics_on_plan_like_text(text in plan_like_text(), max in 0usize..4) {
        if let Ok(plan) = Plan::parse(&text, TOOLS, max) {
            prop_assert!(plan.validate(TOOLS, max).is_ok());
            prop_assert_eq!(plan.waves().concat().len(), plan.steps.len());
        }
    }

    #[test]
    fn render_then_parse_gives_back_the_plan(plan in valid_plan()) {
        prop_assert_eq!(plan.validate(TOOLS, 10), Ok(()));
        let text = plan.render();
        prop_assert_eq!(Plan::parse(&text, TOOLS, 10), Ok(plan), "rendered:\n{}", text);
    }

    #[test]
    fn waves_put_every_step_once_after_its_dependencies(plan in valid_plan()) {
        let waves = plan.waves();
        let mut wave_of = vec![usize::MAX; plan.steps.len()];
        for (w, wave) in waves.iter().enumerate() {
            prop_assert!(!wave.is_empty());
            prop_assert!(wave.windows(2).all(|p| p[0] < p[1]), "not in text order: {:?}", wave);
            for &i in wave {
                prop_assert_eq!(wave_of[i], usize::MAX, "step {} twice", i);
                wave_of[i] = w;
            }
        }
        for (i, step) in plan.steps.iter().enumerate() {
            prop_assert!(wave_of[i] != usize::MAX, "step {} missing", i);
            for dep in &step.depends_on {
                let d = plan.steps.iter().position(|s| &s.variable == dep).unwrap();
                prop_assert!(wave_of[d] < wave_of[i]);
            }
        }
    }

    #[test]
    fn substitute_without_results_changes_nothing(text in any::<String>()) {
        prop_assert_eq!(substitute(&text, &HashMap::new()), text);
    }
}
