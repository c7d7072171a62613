//! The plan language's named and list arguments, tool signatures and XML form, through the
//! public API: the research seed's plan, argument checks with their messages, and properties
//! relating the line and XML forms.

use ferret_plan::{
    ArgumentKind, ArgumentValue, NamedParameter, Plan, PlanError, StepArguments, ToolSignature,
};
use proptest::prelude::*;

const TOOLS: &[&str] = &["Documentalist", "FileSearch", "WebSearch"];

const SIGNATURES: &[ToolSignature<'static>] = &[
    ToolSignature {
        tool: "Documentalist",
        positional: 0..=0,
        named: &[
            NamedParameter::optional("url", ArgumentKind::Text),
            NamedParameter::optional("name", ArgumentKind::Text),
            NamedParameter::optional("keywords", ArgumentKind::List),
            NamedParameter::required("vector_store", ArgumentKind::Text),
        ],
    },
    ToolSignature {
        tool: "FileSearch",
        positional: 1..=1,
        named: &[NamedParameter::required(
            "vector_store",
            ArgumentKind::Reference,
        )],
    },
    ToolSignature {
        tool: "WebSearch",
        positional: 1..=2,
        named: &[],
    },
];

const SEED: &str = r#"#E0 = Documentalist[vector_store="AI Engineer Basic Course Syllabus"]
#E1 = Documentalist[name="Prompt_Engineering_for_Developers.txt", vector_store=#E0]
#E2 = Documentalist[url="https://huyenchip.com/2025/01/07/agents.html", name="Agents By Chip Huyen", keywords=["Agents", "Planning"], vector_store=#E0]
#E3 = FileSearch["Prompt Engineering", vector_store=#E0]
#E4 = FileSearch["Multi-Agent Systems", vector_store=#E0]
#E5 = WebSearch["Key Takeaways on multi-agent orchestration", "https://blog.langchain.com/exa/"]
"#;

fn text(t: &str) -> ArgumentValue {
    ArgumentValue::Text(t.to_string())
}

fn named(pairs: &[(&str, ArgumentValue)]) -> Vec<(String, ArgumentValue)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect()
}

#[test]
fn the_seed_plan_parses_with_the_arguments_written() {
    let plan = Plan::parse(SEED, TOOLS, 10).unwrap();
    let e0 = ArgumentValue::Reference("E0".into());
    let expected = [
        (
            vec![],
            named(&[("vector_store", text("AI Engineer Basic Course Syllabus"))]),
        ),
        (
            vec![],
            named(&[
                ("name", text("Prompt_Engineering_for_Developers.txt")),
                ("vector_store", e0.clone()),
            ]),
        ),
        (
            vec![],
            named(&[
                ("url", text("https://huyenchip.com/2025/01/07/agents.html")),
                ("name", text("Agents By Chip Huyen")),
                (
                    "keywords",
                    ArgumentValue::List(vec!["Agents".into(), "Planning".into()]),
                ),
                ("vector_store", e0.clone()),
            ]),
        ),
        (
            vec![text("Prompt Engineering")],
            named(&[("vector_store", e0.clone())]),
        ),
        (
            vec![text("Multi-Agent Systems")],
            named(&[("vector_store", e0.clone())]),
        ),
        (
            vec![
                text("Key Takeaways on multi-agent orchestration"),
                text("https://blog.langchain.com/exa/"),
            ],
            vec![],
        ),
    ];
    assert_eq!(plan.steps.len(), expected.len());
    for (step, (positional, named)) in plan.steps.iter().zip(expected) {
        assert_eq!(
            step.arguments(),
            Ok(StepArguments { positional, named }),
            "#{}",
            step.variable
        );
    }
    let depends: Vec<Vec<&str>> = plan
        .steps
        .iter()
        .map(|s| s.depends_on.iter().map(String::as_str).collect())
        .collect();
    let e0 = vec!["E0"];
    assert_eq!(
        depends,
        [vec![], e0.clone(), e0.clone(), e0.clone(), e0, vec![]]
    );
    // E0 and E5 depend on nothing and run first; E1..E4 need E0's store.
    assert_eq!(plan.waves(), vec![vec![0, 5], vec![1, 2, 3, 4]]);
    assert_eq!(plan.validate_arguments(SIGNATURES), Ok(()));
    assert_eq!(Plan::parse_any(SEED, TOOLS, 10), Ok(plan.clone()));
    assert_eq!(Plan::parse(&plan.render(), TOOLS, 10), Ok(plan));
}

#[test]
fn bad_arguments_name_the_step_and_what_the_tool_takes() {
    let check = |text: &str| {
        Plan::parse(text, TOOLS, 10)
            .unwrap()
            .validate_arguments(SIGNATURES)
    };
    let error = check(
        "#E0 = Documentalist[vector_store=\"x\"]\n\
         #E1 = FileSearch[\"Prompts\", vector_store=\"x\"]",
    )
    .unwrap_err();
    assert_eq!(
        error,
        PlanError::BadArguments {
            step: "E1".into(),
            tool: "FileSearch".into(),
            problem: "`vector_store` is text, but must be #En".into(),
            expected: "1 positional value; named: vector_store=#En (required)".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "step #E1 gives FileSearch bad arguments: `vector_store` is text, but must be #En; \
         FileSearch takes 1 positional value; named: vector_store=#En (required)"
    );
    // A grammar error is reported the same way.
    let error = check("#E1 = WebSearch[\"agents, \"planning\"]").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("step #E1 gives WebSearch bad arguments: expected `,` between arguments"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .ends_with("WebSearch takes 1 to 2 positional values and no named value"),
        "{error}"
    );
    // The first bad step in text order is reported.
    let error =
        check("#E1 = WebSearch[\"a\", \"b\", \"c\"]\n#E2 = Documentalist[url=x]").unwrap_err();
    assert!(
        error.to_string().contains("#E1") && error.to_string().contains("it gives 3"),
        "{error}"
    );
    // Tools without a signature are not checked; a tool's spelling in the plan is matched
    // ignoring case.
    let plan = Plan::parse("#E1 = Search[url=, \"unclosed]", &["Search"], 3).unwrap();
    assert_eq!(plan.validate_arguments(SIGNATURES), Ok(()));
    let lower = [ToolSignature {
        tool: "search",
        positional: 1..=1,
        named: &[],
    }];
    assert!(matches!(
        plan.validate_arguments(&lower),
        Err(PlanError::BadArguments { .. })
    ));
}

/// A text value: printable ASCII and a little beyond, trimmed, never `#` (references are
/// generated on purpose).
fn value_text() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 ,.?:/=&<>'\"\\\\\\[\\]()é日-]{1,14}"
        .prop_map(|s| s.trim().to_string())
        .prop_filter("not blank", |s| !s.is_empty())
}

/// A value for step `index`: text (sometimes naming an earlier result), a list, or a reference
/// to an earlier step.
fn value(index: usize) -> BoxedStrategy<ArgumentValue> {
    let plain = value_text().prop_map(ArgumentValue::Text);
    let list = prop::collection::vec(value_text(), 1..4).prop_map(ArgumentValue::List);
    if index == 0 {
        return prop_oneof![3 => plain, 1 => list].boxed();
    }
    let earlier = move || (0..index).prop_map(|j| format!("E{j}"));
    let mentioning =
        (value_text(), earlier()).prop_map(|(t, e)| ArgumentValue::Text(format!("{t} #{e}")));
    let reference = earlier().prop_map(ArgumentValue::Reference);
    prop_oneof![3 => plain, 1 => mentioning, 1 => list, 1 => reference].boxed()
}

/// True when one text written plain would be read as a list of arguments.
fn starts_like_a_list(text: &str) -> bool {
    let name = text.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    text.starts_with(['"', '[', '#'])
        || (name.len() < text.len()
            && text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.trim_start().starts_with('='))
}

/// Arguments for step `index`: one plain text (as a search step is written), or several
/// values, named or not.
fn step_arguments(index: usize) -> BoxedStrategy<StepArguments> {
    let plain = value_text()
        // What a model writes plain: not like a list, no escapes, not wrapped in quotes
        // (which the line parser removes).
        .prop_filter("reads as plain text", |t| {
            !starts_like_a_list(t) && !t.contains('\\') && !t.starts_with('\'')
        })
        .prop_map(|t| StepArguments {
            positional: vec![ArgumentValue::Text(t)],
            named: vec![],
        });
    let names = prop::sample::subsequence(vec!["url", "name", "keywords", "vector_store"], 0..3);
    let several = (
        prop::collection::vec(value(index), 0..3),
        names,
        prop::collection::vec(value(index), 3),
    )
        .prop_map(|(positional, names, values)| StepArguments {
            positional,
            named: names.into_iter().map(str::to_string).zip(values).collect(),
        })
        .prop_filter("not one plain text, not empty", |a| {
            let one_text = matches!(
                (a.positional.as_slice(), a.named.as_slice()),
                ([ArgumentValue::Text(_)], [])
            );
            !one_text && a.positional.len() + a.named.len() > 0
        });
    prop_oneof![1 => plain, 2 => several].boxed()
}

#[derive(Debug, Clone)]
struct GeneratedStep {
    tool: &'static str,
    reasoning: Option<String>,
    arguments: StepArguments,
}

fn generated_plan() -> impl Strategy<Value = Vec<GeneratedStep>> {
    (1..5usize).prop_flat_map(|n| {
        (0..n)
            .map(|index| {
                (
                    prop::sample::select(TOOLS.to_vec()),
                    proptest::option::of(
                        "[A-Za-z][A-Za-z0-9 ,.?'&<>\"-]{0,20}".prop_map(|s| s.trim().to_string()),
                    ),
                    step_arguments(index),
                )
                    .prop_map(|(tool, reasoning, arguments)| GeneratedStep {
                        tool,
                        reasoning,
                        arguments,
                    })
            })
            .collect::<Vec<_>>()
    })
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn line_value(value: &ArgumentValue) -> String {
    match value {
        ArgumentValue::Text(t) => quoted(t),
        ArgumentValue::List(items) => {
            let items: Vec<String> = items.iter().map(|i| quoted(i)).collect();
            format!("[{}]", items.join(", "))
        }
        ArgumentValue::Reference(v) => format!("#{v}"),
        other => panic!("unexpected value {other:?}"),
    }
}

/// The plan as a model writes the line form: a plain text as it is, other values quoted.
fn line_form(steps: &[GeneratedStep]) -> String {
    let mut out = String::new();
    for (i, step) in steps.iter().enumerate() {
        if let Some(reasoning) = &step.reasoning {
            out.push_str(&format!("Plan: {reasoning}\n"));
        }
        let a = &step.arguments;
        let argument = match (a.positional.as_slice(), a.named.as_slice()) {
            ([ArgumentValue::Text(plain)], []) => plain.clone(),
            _ => a
                .positional
                .iter()
                .map(line_value)
                .chain(
                    a.named
                        .iter()
                        .map(|(n, v)| format!("{n}={}", line_value(v))),
                )
                .collect::<Vec<_>>()
                .join(", "),
        };
        out.push_str(&format!("#E{i} = {}[{argument}]\n", step.tool));
    }
    out
}

fn escaped(text: &str, cdata: bool) -> String {
    if cdata && !text.contains("]]>") {
        return format!("<![CDATA[{text}]]>");
    }
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn xml_value(value: &ArgumentValue, cdata: bool, gap: &str) -> String {
    match value {
        ArgumentValue::Text(t) => format!("{gap}{}{gap}", escaped(t, cdata)),
        ArgumentValue::List(items) => items
            .iter()
            .map(|i| format!("{gap}<item>{}</item>", escaped(i, cdata)))
            .collect::<Vec<_>>()
            .concat(),
        ArgumentValue::Reference(v) => format!("#{v}"),
        other => panic!("unexpected value {other:?}"),
    }
}

/// The plan as a model writes XML, inside prose and a code fence; `pretty` adds line breaks
/// and indentation inside and between elements.
fn xml_form(steps: &[GeneratedStep], cdata: bool, pretty: bool) -> String {
    let (nl, gap) = if pretty { ("\n", "\n      ") } else { ("", "") };
    let mut out = format!("Here is the plan.\n```xml\n<?xml version=\"1.0\"?>\n<plan>{nl}");
    for (i, step) in steps.iter().enumerate() {
        let reason = step
            .reasoning
            .as_ref()
            .map(|r| format!(" reason=\"{}\"", escaped(r, false)))
            .unwrap_or_default();
        out.push_str(&format!(
            "  <step id=\"{}E{i}\" tool=\"{}\"{reason}>{nl}",
            if i % 2 == 1 { "#" } else { "" },
            step.tool
        ));
        let a = &step.arguments;
        let values = a
            .positional
            .iter()
            .map(|v| (None, v))
            .chain(a.named.iter().map(|(n, v)| (Some(n), v)));
        for (name, value) in values {
            let name = name.map(|n| format!(" name=\"{n}\"")).unwrap_or_default();
            out.push_str(&format!(
                "    <arg{name}>{}</arg>{nl}",
                xml_value(value, cdata, gap)
            ));
        }
        out.push_str(&format!("  </step>{nl}"));
    }
    out.push_str("</plan>\n```\nLet me know if you need more.");
    out
}

/// Text that looks partly like an XML plan, to reach deeper into the reader than random text.
fn xml_like_text() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "<plan>",
        "</plan>",
        "<plan",
        "<plan/>",
        "<step id=\"E1\" tool=\"WebSearch\">",
        "<step",
        "</step>",
        "<arg>",
        "<arg name=\"k\">",
        "</arg>",
        "<item>",
        "</item>",
        "<arg/>",
        "id=",
        "'",
        "\"",
        "=",
        ">",
        "<",
        "/>",
        "</",
        "&amp;",
        "&",
        "&#",
        "&#x110000;",
        "&#xD800;",
        ";",
        "<![CDATA[",
        "]]>",
        "<!--",
        "-->",
        "#E1",
        "#E",
        "x",
        " ",
        "\n",
        "é",
        "日本",
        "```",
        "[",
        "]",
        ",",
    ]);
    prop::collection::vec(fragment, 0..40).prop_map(|f| f.concat())
}

proptest! {
    #[test]
    fn parse_any_never_panics(text in any::<String>(), max in 0usize..5) {
        let _ = Plan::parse_any(&text, TOOLS, max);
    }

    #[test]
    fn parse_any_never_panics_on_xml_like_text(text in xml_like_text()) {
        if let Ok(plan) = Plan::parse_any(&text, TOOLS, 5) {
            prop_assert!(plan.validate(TOOLS, 5).is_ok());
            let _ = plan.validate_arguments(SIGNATURES);
        }
    }

    #[test]
    fn the_line_and_xml_forms_give_the_same_plan(
        steps in generated_plan(),
        cdata in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let line = line_form(&steps);
        let xml = xml_form(&steps, cdata, pretty);
        let from_line = Plan::parse(&line, TOOLS, 10);
        let from_xml = Plan::parse_xml(&xml, TOOLS, 10);
        prop_assert!(from_line.is_ok(), "line form:\n{}\n{:?}", line, from_line);
        prop_assert_eq!(&from_xml, &from_line, "XML form:\n{}\nline form:\n{}", xml, line);
        let plan = from_line.unwrap();
        prop_assert_eq!(from_xml.unwrap().render(), plan.render());
        prop_assert_eq!(Plan::parse_any(&xml, TOOLS, 10), Ok(plan.clone()));
        prop_assert_eq!(Plan::parse(&plan.render(), TOOLS, 10), Ok(plan.clone()));
        for (step, generated) in plan.steps.iter().zip(&steps) {
            prop_assert_eq!(step.arguments(), Ok(generated.arguments.clone()));
            prop_assert_eq!(&step.reasoning, &generated.reasoning);
        }
    }
}
