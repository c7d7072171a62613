//! Tests of `arguments`.

use super::*;
use crate::PlanStep;
use proptest::prelude::*;

fn text(t: &str) -> ArgumentValue {
    ArgumentValue::Text(t.to_string())
}

fn reference(v: &str) -> ArgumentValue {
    ArgumentValue::Reference(v.to_string())
}

fn list(items: &[&str]) -> ArgumentValue {
    ArgumentValue::List(items.iter().map(|s| s.to_string()).collect())
}

fn args(positional: Vec<ArgumentValue>, named: Vec<(&str, ArgumentValue)>) -> StepArguments {
    StepArguments {
        positional,
        named: named.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
}

fn parse(t: &str) -> Result<StepArguments, ArgumentError> {
    StepArguments::parse(t)
}

#[test]
fn a_plain_argument_is_one_text_value_with_its_references() {
    for plain in [
        "birthplace of #E1",
        "director of The Visit, 2015 film",
        "#E1 #E2 awards",
        "#E1 films, \"quoted\" later",
        "films [2015] by #e1",
        "1+1=2",
        "'single quoted'",
        "“curly”",
    ] {
        assert_eq!(parse(plain), Ok(args(vec![text(plain)], vec![])), "{plain}");
    }
    // `\\` and `\"` read as in strings, so `Tool["a\\b"]` (whose quotes the line parser
    // removes) is still `a\b`; other backslashes stay.
    assert_eq!(
        parse(r#"C:\\temp and \"hi\" \n"#),
        Ok(args(vec![text(r#"C:\temp and "hi" \n"#)], vec![]))
    );
    assert_eq!(parse("   "), Ok(StepArguments::default()));
}

#[test]
fn lists_of_strings_references_and_named_values() {
    assert_eq!(
        parse(
            r#"url="https://huyenchip.com/2025/01/07/agents.html", name="Agents By Chip Huyen", keywords=["Agents", "Planning"], vector_store=#E0"#
        ),
        Ok(args(
            vec![],
            vec![
                ("url", text("https://huyenchip.com/2025/01/07/agents.html")),
                ("name", text("Agents By Chip Huyen")),
                ("keywords", list(&["Agents", "Planning"])),
                ("vector_store", reference("E0")),
            ]
        ))
    );
    assert_eq!(
        parse(r#""Key takeaways, part 2", "https://blog.langchain.com/exa/""#),
        Ok(args(
            vec![
                text("Key takeaways, part 2"),
                text("https://blog.langchain.com/exa/")
            ],
            vec![]
        ))
    );
    // Spaces around tokens, escapes, an empty list, lower-case references, `-` in names.
    assert_eq!(
        parse(r#"  "say \"hi\" \\ #E1" ,  tags = [ ] , from-step =  #e12 , k=[ "a,b" ,"]" ]  "#),
        Ok(args(
            vec![text(r#"say "hi" \ #E1"#)],
            vec![
                ("tags", list(&[])),
                ("from-step", reference("E12")),
                ("k", list(&["a,b", "]"])),
            ]
        ))
    );
    assert_eq!(parse("#E3"), Ok(args(vec![reference("E3")], vec![])));
    assert_eq!(
        parse("#E1, #E2"),
        Ok(args(vec![reference("E1"), reference("E2")], vec![]))
    );
    assert_eq!(parse(r#"_x="""#), Ok(args(vec![], vec![("_x", text(""))])));
}

#[test]
fn grammar_errors_say_what_to_write() {
    for (input, expected, advice) in [
        (
            r#""Prompt Engineering, vector_store=#E0"#,
            ArgumentError::UnterminatedString {
                start: "\"Prompt Engineering…".into(),
            },
            "end every string with `\"`",
        ),
        (
            r#"path="C:\temp""#,
            ArgumentError::UnknownEscape {
                escape: "\\t".into(),
            },
            "a backslash as `\\\\`",
        ),
        (
            r#"keywords=["Agents", "Planning""#,
            ArgumentError::UnterminatedList,
            "no closing `]`",
        ),
        (
            r#"keywords=["Agents","#,
            ArgumentError::UnterminatedList,
            "[\"a\", \"b\"]",
        ),
        (
            r#"url=, name="x""#,
            ArgumentError::MissingValue { name: "url".into() },
            "url=\"text\"",
        ),
        (
            "name =  ",
            ArgumentError::MissingValue {
                name: "name".into(),
            },
            "name=#E1",
        ),
        (
            r#""a",, "b""#,
            ArgumentError::MissingArgument,
            "remove the extra `,`",
        ),
        (
            r#""a", "b","#,
            ArgumentError::MissingArgument,
            "remove the extra `,`",
        ),
        (
            r#"keywords=["a",]"#,
            ArgumentError::MissingArgument,
            "remove the extra `,`",
        ),
        (
            "url=https://example.org/a.html",
            ArgumentError::Unquoted {
                name: Some("url".into()),
                found: "https://example.org/a.html".into(),
            },
            "url=\"text\"",
        ),
        (
            r#""a", #E1 films"#,
            ArgumentError::Unquoted {
                name: None,
                found: "#E1 films".into(),
            },
            "double quotes",
        ),
        (
            r#"keywords=["Agents", Planning]"#,
            ArgumentError::NotAString {
                found: "Planning".into(),
            },
            "only quoted strings",
        ),
        (
            "keywords=[#E1]",
            ArgumentError::NotAString {
                found: "#E1".into(),
            },
            "only quoted strings",
        ),
        (
            r#""The Visit" (2015) director"#,
            ArgumentError::Expected {
                expected: "`,` between arguments",
                found: "(2015) director".into(),
            },
            "quote each text value",
        ),
        (
            r#"k=["a" "b"]"#,
            ArgumentError::Expected {
                expected: "`,` or `]` in a list",
                found: "\"b\"".into(),
            },
            "expected `,` or `]` in a list",
        ),
        (
            r#"name="a", name="b""#,
            ArgumentError::DuplicateName {
                name: "name".into(),
            },
            "give each named argument once",
        ),
        (
            r#"vector_store=#E0, "Prompt Engineering""#,
            ArgumentError::PositionalAfterNamed,
            "put values without names first",
        ),
    ] {
        let error = parse(input).unwrap_err();
        assert_eq!(error, expected, "{input}");
        let message = error.to_string();
        assert!(message.contains(advice), "{input}: {message}");
    }
    let mut arguments = StepArguments::default();
    let error = arguments.push_named("my key", text("x")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`my key` is not a valid argument name; use letters, digits, `_` and `-`, \
         starting with a letter or `_`"
    );
}

#[test]
fn render_quotes_all_but_one_plain_text() {
    let seed = args(
        vec![text("Prompt Engineering")],
        vec![("vector_store", reference("E0"))],
    );
    assert_eq!(seed.render(), r#""Prompt Engineering", vector_store=#E0"#);
    assert_eq!(
        args(vec![text("birthplace of #E1")], vec![]).render(),
        "birthplace of #E1"
    );
    assert_eq!(
        args(vec![text(r#"director of "The Visit""#)], vec![]).render(),
        r#"director of "The Visit""#
    );
    // Backslashes are doubled only where plain text would decode them.
    assert_eq!(
        args(vec![text(r#"C:\temp \\ \" \"#)], vec![]).render(),
        r#"C:\temp \\\ \\" \"#
    );
    // One text that would not read back as plain is quoted.
    for (value, rendered) in [
        ("x=1", r#""x=1""#),
        ("[1]", r#""[1]""#),
        ("#E1", r##""#E1""##),
        ("\"The Visit\" director", r#""\"The Visit\" director""#),
        (" padded", r#"" padded""#),
        ("", r#""""#),
    ] {
        assert_eq!(args(vec![text(value)], vec![]).render(), rendered);
    }
    assert_eq!(
        args(vec![], vec![("k", list(&["a", "b\"c"]))]).render(),
        r#"k=["a", "b\"c"]"#
    );
    assert_eq!(StepArguments::default().render(), "");
}

#[test]
fn get_finds_a_named_value() {
    let arguments = parse(r#""q", vector_store=#E0"#).unwrap();
    assert_eq!(arguments.get("vector_store"), Some(&reference("E0")));
    assert_eq!(arguments.get("q"), None);
}

const DOCUMENTALIST: ToolSignature<'static> = ToolSignature {
    tool: "Documentalist",
    positional: 0..=0,
    named: &[
        NamedParameter::optional("url", ArgumentKind::Text),
        NamedParameter::optional("name", ArgumentKind::Text),
        NamedParameter::optional("keywords", ArgumentKind::List),
        NamedParameter::required("vector_store", ArgumentKind::Text),
    ],
};

const FILE_SEARCH: ToolSignature<'static> = ToolSignature {
    tool: "FileSearch",
    positional: 1..=1,
    named: &[NamedParameter::required(
        "vector_store",
        ArgumentKind::Reference,
    )],
};

#[test]
fn a_signature_reports_the_first_misfit() {
    let check =
        |signature: &ToolSignature<'_>, input: &str| signature.check(&parse(input).unwrap()).err();
    assert_eq!(check(&FILE_SEARCH, r#""Prompts", vector_store=#E0"#), None);
    assert_eq!(
        check(&DOCUMENTALIST, r#"keywords=["a"], vector_store=#E0"#),
        None
    );
    assert_eq!(check(&DOCUMENTALIST, r#"vector_store="Syllabus""#), None);
    for (signature, input, problem) in [
        (
            &FILE_SEARCH,
            r#""a", "b", vector_store=#E0"#,
            "it gives 2 positional values",
        ),
        (
            &FILE_SEARCH,
            "vector_store=#E0",
            "it gives 0 positional values",
        ),
        (
            &FILE_SEARCH,
            r#"["a"], vector_store=#E0"#,
            "positional value 1 is a list, but positional values are text",
        ),
        (
            &FILE_SEARCH,
            r#""a", vector_store="Syllabus""#,
            "`vector_store` is text, but must be #En",
        ),
        (
            &DOCUMENTALIST,
            r#"keywords="Agents", vector_store=#E0"#,
            "`keywords` is text, but must be [\"a\", \"b\"]",
        ),
        (
            &DOCUMENTALIST,
            r#"title="x", vector_store=#E0"#,
            "`title` is not one of its named arguments",
        ),
        (
            &DOCUMENTALIST,
            r#"url="https://x.org""#,
            "the required `vector_store` is missing",
        ),
    ] {
        assert_eq!(check(signature, input).as_deref(), Some(problem), "{input}");
    }
}

#[test]
fn a_signature_describes_what_it_takes() {
    assert_eq!(
        FILE_SEARCH.describe(),
        "1 positional value; named: vector_store=#En (required)"
    );
    assert_eq!(
        DOCUMENTALIST.describe(),
        "no positional value; named: url=\"text\" or #En (optional), name=\"text\" or #En \
         (optional), keywords=[\"a\", \"b\"] (optional), vector_store=\"text\" or #En \
         (required)"
    );
    let web = |positional| ToolSignature {
        tool: "WebSearch",
        positional,
        named: &[],
    };
    for (range, described) in [
        (1..=2, "1 to 2 positional values and no named value"),
        (0..=3, "at most 3 positional values and no named value"),
        (
            2..=usize::MAX,
            "at least 2 positional values and no named value",
        ),
        (
            0..=usize::MAX,
            "any number of positional values and no named value",
        ),
    ] {
        assert_eq!(web(range).describe(), described);
    }
    assert!(web(1..=2).applies_to("websearch"));
    assert!(!web(1..=2).applies_to("Search"));
}

fn any_value() -> impl Strategy<Value = ArgumentValue> {
    prop_oneof![
        3 => any::<String>().prop_map(ArgumentValue::Text),
        3 => "[ -~]{0,12}".prop_map(ArgumentValue::Text),
        1 => prop::collection::vec(any::<String>(), 0..3).prop_map(ArgumentValue::List),
        1 => (0u32..30).prop_map(|n| ArgumentValue::Reference(format!("E{n}"))),
    ]
}

fn any_arguments() -> impl Strategy<Value = StepArguments> {
    let named = prop::collection::btree_map("[a-z_][a-z0-9_-]{0,6}", any_value(), 0..3);
    (prop::collection::vec(any_value(), 0..3), named).prop_map(|(positional, named)| {
        StepArguments {
            positional,
            named: named.into_iter().collect(),
        }
    })
}

/// The references of the values, as `PlanStep::depends_on` lists them.
fn value_references(arguments: &StepArguments) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    let values = arguments
        .positional
        .iter()
        .chain(arguments.named.iter().map(|(_, v)| v));
    for value in values {
        match value {
            ArgumentValue::Text(t) => texts.push(t.clone()),
            ArgumentValue::List(items) => texts.extend(items.iter().cloned()),
            ArgumentValue::Reference(v) => texts.push(format!("#{v}")),
        }
    }
    let mut out: Vec<String> = Vec::new();
    for reference in texts
        .iter()
        .flat_map(|t| PlanStep::new("E0", "T", t.as_str(), None).depends_on)
    {
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    out
}

proptest! {
    #[test]
    fn parse_never_panics(input in any::<String>()) {
        let _ = parse(&input);
    }

    #[test]
    fn render_reads_back_and_keeps_the_references(arguments in any_arguments()) {
        let rendered = arguments.render();
        prop_assert_eq!(parse(&rendered), Ok(arguments.clone()), "rendered: {}", rendered);
        let step = PlanStep::new("E99", "Tool", rendered.clone(), None);
        prop_assert_eq!(step.depends_on, value_references(&arguments));
    }
}
