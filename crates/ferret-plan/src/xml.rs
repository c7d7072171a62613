//! The XML form of a plan, which some models write more reliably than the line form:
//!
//! ```xml
//! <plan>
//!   <step id="E1" tool="FileSearch" reason="Find the course notes on prompts">
//!     <arg>Prompt engineering</arg>
//!     <arg name="vector_store">#E0</arg>
//!   </step>
//!   <step id="E2" tool="Documentalist">
//!     <arg name="url">https://example.org/a.html</arg>
//!     <arg name="keywords"><item>Agents</item><item>Planning</item></arg>
//!   </step>
//! </plan>
//! ```
//!
//! Around the plan anything goes (prose, code fences, `<?xml ...?>`): reading starts at the
//! first `<plan>` tag that begins a line, or else the first anywhere, and stops at its
//! `</plan>`. Inside, the reader is strict:
//!
//! - `<plan>` holds only `<step>` elements; `<step>` only `<arg>`; `<arg>` either text or only
//!   `<item>` elements (a list of strings); `<item>` only text. Any other element, or text
//!   outside an `<arg>`, is an error.
//! - `<step>` takes `id` (required, `E1` or `#E1`), `tool` (required) and `reason` (optional,
//!   the step's reasoning); `<arg>` takes `name` (optional: without it the value is
//!   positional, and positional values come first); `<plan>` and `<item>` take none. Attribute
//!   values are in double or single quotes.
//! - An `<arg>` whose text is exactly a reference (`#E0`) is that reference; other text,
//!   references inside it included, is a text value. An empty `<arg>` is an error.
//! - Text is decoded: the entities `&amp;` `&lt;` `&gt;` `&quot;` `&apos;`, numeric ones like
//!   `&#233;` and `&#xE9;`, and `<![CDATA[...]]>` sections; an `&` that starts no entity is kept
//!   as written, an unknown entity such as `&nbsp;` is an error. Whitespace around a value or
//!   an item is dropped, and line breaks inside one become a space (with the spaces around
//!   them), as in `reason`. Comments `<!-- ... -->` are skipped.
//!
//! Errors name the line and, once its `id` has been read, the step.

use ferret_core::text::{cut, CutMark};

use crate::arguments::{exact_reference, ArgumentValue, StepArguments};
use crate::error::PlanError;

/// A step as the XML writes it, before its tool is normalised.
pub(super) struct XmlStep {
    pub variable: String,
    pub tool: String,
    pub arguments: StepArguments,
    pub reasoning: Option<String>,
}

/// Where the plan element starts: the first `<plan>` tag that begins a line, else the first.
pub(super) fn plan_start(text: &str) -> Option<usize> {
    let mut tags = text.match_indices("<plan").map(|(at, _)| at).filter(|&at| {
        text[at + 5..]
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace())
    });
    let first = tags.clone().next()?;
    let begins_line = |at: usize| {
        text[..at]
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .trim()
            .is_empty()
    };
    Some(tags.find(|&at| begins_line(at)).unwrap_or(first))
}

/// Reads the steps of the plan element in `text`.
pub(super) fn read_plan(text: &str) -> Result<Vec<XmlStep>, PlanError> {
    let Some(start) = plan_start(text) else {
        return Err(PlanError::MalformedXml {
            step: None,
            line: 1,
            problem: "there is no <plan> element; write the plan as \
                      <plan><step id=\"E1\" tool=\"Tool\"><arg>input</arg></step></plan>"
                .to_string(),
        });
    };
    let mut reader = Reader {
        text,
        at: start,
        step: None,
    };
    reader.plan()
}

/// A start tag: `<name attribute="value" ...>` or `<name ... />`.
struct Tag<'t> {
    name: &'t str,
    attributes: Vec<(&'t str, String)>,
    /// Written `<name ... />`, so it has no content and no end tag.
    empty: bool,
    /// Where the tag starts, for messages.
    at: usize,
}

impl Tag<'_> {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What an element holds, as [`Reader::content`] hands it on.
enum Content<'t> {
    Element(Tag<'t>),
    /// Decoded text, and where it starts.
    Text(String, usize),
}

enum Node<'t> {
    Open(Tag<'t>),
    Close(&'t str),
    /// Decoded text, or a CDATA section's content.
    Text(String),
    End,
}

struct Reader<'t> {
    text: &'t str,
    at: usize,
    /// The step being read, named in messages.
    step: Option<String>,
}

impl<'t> Reader<'t> {
    fn error(&self, at: usize, problem: impl Into<String>) -> PlanError {
        let before = self
            .text
            .as_bytes()
            .get(..at)
            .unwrap_or(self.text.as_bytes());
        PlanError::MalformedXml {
            step: self.step.clone(),
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            problem: problem.into(),
        }
    }

    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    fn plan(&mut self) -> Result<Vec<XmlStep>, PlanError> {
        let tag = self.open_tag()?;
        self.allow_attributes(&tag, &[], "it takes no attributes")?;
        let mut steps = Vec::new();
        self.content(&tag, |reader, content| match content {
            Content::Element(step) if step.name == "step" => {
                steps.push(reader.step(step)?);
                reader.step = None;
                Ok(())
            }
            Content::Element(other) => {
                Err(reader.not_allowed(&other, "a <plan>, which holds only <step> elements"))
            }
            Content::Text(text, at) => reader.only_space(&text, at, "a <step>"),
        })?;
        Ok(steps)
    }

    fn step(&mut self, tag: Tag<'t>) -> Result<XmlStep, PlanError> {
        const EXAMPLE: &str = "write <step id=\"E1\" tool=\"Tool\">";
        let Some(id) = tag.attribute("id") else {
            return Err(self.error(tag.at, format!("a <step> has no id; {EXAMPLE}")));
        };
        let variable = id.trim();
        let variable = variable.strip_prefix('#').unwrap_or(variable);
        let Some(variable) = exact_reference(&format!("#{variable}")) else {
            return Err(self.error(
                tag.at,
                format!("the step id `{id}` is not a step variable like E1; {EXAMPLE}"),
            ));
        };
        self.step = Some(variable.clone());
        self.allow_attributes(&tag, &["id", "tool", "reason"], "use id, tool and reason")?;
        let tool = tag.attribute("tool").map(str::trim).unwrap_or_default();
        if tool.is_empty() {
            return Err(self.error(tag.at, format!("the step has no tool; {EXAMPLE}")));
        }
        let reasoning = tag
            .attribute("reason")
            .map(join_lines)
            .filter(|r| !r.is_empty());
        let mut arguments = StepArguments::default();
        self.content(&tag, |reader, content| match content {
            Content::Element(arg) if arg.name == "arg" => {
                let at = arg.at;
                let (name, value) = reader.arg(arg)?;
                let added = match name {
                    Some(name) => arguments.push_named(&name, value),
                    None => arguments.push_positional(value),
                };
                added.map_err(|error| reader.error(at, error.to_string()))
            }
            Content::Element(other) => {
                Err(reader.not_allowed(&other, "a <step>, which holds only <arg> elements"))
            }
            Content::Text(text, at) => reader.only_space(&text, at, "an <arg>"),
        })?;
        Ok(XmlStep {
            variable,
            tool: tool.to_string(),
            arguments,
            reasoning,
        })
    }

    /// An `<arg>`: its name, if any, and its value.
    fn arg(&mut self, tag: Tag<'t>) -> Result<(Option<String>, ArgumentValue), PlanError> {
        self.allow_attributes(&tag, &["name"], "use name")?;
        let name = tag.attribute("name").map(|n| n.trim().to_string());
        let mut text = String::new();
        let mut items = Vec::new();
        self.content(&tag, |reader, content| match content {
            Content::Element(item) if item.name == "item" => {
                items.push(reader.item(item)?);
                Ok(())
            }
            Content::Element(other) => {
                Err(reader.not_allowed(&other, "an <arg>, which holds text or <item> elements"))
            }
            Content::Text(more, _) => {
                text.push_str(&more);
                Ok(())
            }
        })?;
        if !items.is_empty() {
            if !text.trim().is_empty() {
                return Err(self.error(
                    tag.at,
                    "an <arg> mixes text and <item> elements; write either text, or only \
                     <item> elements for a list",
                ));
            }
            return Ok((name, ArgumentValue::List(items)));
        }
        let text = join_lines(&text);
        if text.is_empty() {
            return Err(self.error(
                tag.at,
                "an <arg> is empty; write its value inside it, or leave the <arg> out",
            ));
        }
        let value = match exact_reference(&text) {
            Some(variable) => ArgumentValue::Reference(variable),
            None => ArgumentValue::Text(text),
        };
        Ok((name, value))
    }

    fn item(&mut self, tag: Tag<'t>) -> Result<String, PlanError> {
        self.allow_attributes(&tag, &[], "it takes no attributes")?;
        let mut text = String::new();
        self.content(&tag, |reader, content| match content {
            Content::Element(other) => {
                Err(reader.not_allowed(&other, "an <item>, which holds only text"))
            }
            Content::Text(more, _) => {
                text.push_str(&more);
                Ok(())
            }
        })?;
        Ok(join_lines(&text))
    }

    /// Reads the content of `tag` up to its end tag, handing each piece of text and each child
    /// element to `each`.
    fn content(
        &mut self,
        tag: &Tag<'t>,
        mut each: impl FnMut(&mut Self, Content<'t>) -> Result<(), PlanError>,
    ) -> Result<(), PlanError> {
        if tag.empty {
            return Ok(());
        }
        loop {
            let at = self.at;
            match self.node()? {
                Node::Close(name) if name == tag.name => return Ok(()),
                Node::Close(other) => {
                    return Err(self.error(
                        at,
                        format!(
                            "found </{other}> where <{0}> should end; close it with </{0}>",
                            tag.name
                        ),
                    ))
                }
                Node::End => {
                    return Err(self.error(
                        tag.at,
                        format!("<{0}> is not closed; end it with </{0}>", tag.name),
                    ))
                }
                Node::Open(child) => each(self, Content::Element(child))?,
                Node::Text(text) => each(self, Content::Text(text, at))?,
            }
        }
    }

    /// Accepts whitespace between elements; other text belongs in `place`.
    fn only_space(&self, text: &str, at: usize, place: &str) -> Result<(), PlanError> {
        if text.trim().is_empty() {
            return Ok(());
        }
        let leading_space = text.len() - text.trim_start().len();
        Err(self.error(
            at + leading_space,
            format!(
                "the text `{}` is outside {place}; write each input as <arg>...</arg> \
                 inside a <step>",
                shorten(text)
            ),
        ))
    }

    fn not_allowed(&self, element: &Tag<'_>, place: &str) -> PlanError {
        self.error(
            element.at,
            format!("<{}> is not allowed in {place}", element.name),
        )
    }

    fn allow_attributes(
        &self,
        tag: &Tag<'_>,
        allowed: &[&str],
        hint: &str,
    ) -> Result<(), PlanError> {
        match tag.attributes.iter().find(|(n, _)| !allowed.contains(n)) {
            Some((name, _)) => Err(self.error(
                tag.at,
                format!("<{}> has no attribute `{name}`; {hint}", tag.name),
            )),
            None => Ok(()),
        }
    }

    /// The next tag, text or CDATA section; comments are skipped.
    fn node(&mut self) -> Result<Node<'t>, PlanError> {
        loop {
            let at = self.at;
            let rest = self.rest();
            if rest.is_empty() {
                return Ok(Node::End);
            }
            if let Some(comment) = rest.strip_prefix("<!--") {
                let Some(end) = comment.find("-->") else {
                    return Err(self.error(at, "a comment is not closed; end it with -->"));
                };
                self.at += 4 + end + 3;
                continue;
            }
            if let Some(data) = rest.strip_prefix("<![CDATA[") {
                let Some(end) = data.find("]]>") else {
                    return Err(self.error(at, "a CDATA section is not closed; end it with ]]>"));
                };
                self.at += 9 + end + 3;
                return Ok(Node::Text(data[..end].to_string()));
            }
            if let Some(close) = rest.strip_prefix("</") {
                let name = xml_name(close);
                let after = close[name.len()..].trim_start();
                if name.is_empty() || !after.starts_with('>') {
                    return Err(self.error(at, "an end tag is malformed; write it as </name>"));
                }
                self.at = self.text.len() - after.len() + 1;
                return Ok(Node::Close(name));
            }
            if rest.starts_with('<') {
                return self.open_tag().map(Node::Open);
            }
            let end = rest.find('<').unwrap_or(rest.len());
            let text = self.decode(&rest[..end], at)?;
            self.at += end;
            return Ok(Node::Text(text));
        }
    }

    /// A start tag; the reader is at its `<`.
    fn open_tag(&mut self) -> Result<Tag<'t>, PlanError> {
        let at = self.at;
        self.at += 1;
        let name = xml_name(self.rest());
        if name.is_empty() {
            return Err(self.error(
                at,
                "`<` starts no element; write a `<` inside a value as &lt;",
            ));
        }
        self.at += name.len();
        let mut tag = Tag {
            name,
            attributes: Vec::new(),
            empty: false,
            at,
        };
        loop {
            self.at = self.text.len() - self.rest().trim_start().len();
            let rest = self.rest();
            if rest.starts_with("/>") {
                self.at += 2;
                tag.empty = true;
                return Ok(tag);
            }
            if rest.starts_with('>') {
                self.at += 1;
                return Ok(tag);
            }
            let attribute = xml_name(rest);
            if attribute.is_empty() {
                let found = rest
                    .chars()
                    .next()
                    .map_or("the end".to_string(), |c| format!("`{c}`"));
                return Err(self.error(
                    self.at,
                    format!(
                        "<{name}> is not closed by `>` (found {found}); \
                         write attributes as name=\"value\""
                    ),
                ));
            }
            let value = rest[attribute.len()..].trim_start();
            let Some(value) = value.strip_prefix('=') else {
                return Err(self.error(
                    self.at,
                    format!(
                        "the attribute `{attribute}` of <{name}> has no value; \
                         write {attribute}=\"value\""
                    ),
                ));
            };
            let value = value.trim_start();
            let quote = match value.chars().next() {
                Some(q @ ('"' | '\'')) => q,
                _ => {
                    return Err(self.error(
                        self.at,
                        format!(
                            "the value of `{attribute}` in <{name}> is not quoted; \
                             write {attribute}=\"value\""
                        ),
                    ))
                }
            };
            let Some(end) = value[1..].find(quote) else {
                return Err(self.error(
                    self.at,
                    format!("the value of `{attribute}` in <{name}> has no closing {quote}"),
                ));
            };
            let value_at = self.text.len() - value.len() + 1;
            let decoded = self.decode(&value[1..1 + end], value_at)?;
            if tag.attribute(attribute).is_some() {
                return Err(self.error(
                    self.at,
                    format!("<{name}> has the attribute `{attribute}` twice; give it once"),
                ));
            }
            tag.attributes.push((attribute, decoded));
            self.at = value_at + end + 1;
        }
    }

    /// `raw` (text or an attribute value starting at `at`) with its entities decoded.
    fn decode(&self, raw: &str, at: usize) -> Result<String, PlanError> {
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            let after = &rest[amp + 1..];
            let entity = after
                .find(';')
                .filter(|&end| {
                    (1..=10).contains(&end)
                        && after[..end]
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '#')
                })
                .map(|end| &after[..end]);
            let Some(entity) = entity else {
                // A bare `&`, as in a URL's query, is kept: models rarely escape it.
                out.push('&');
                rest = after;
                continue;
            };
            let Some(c) = entity_char(entity) else {
                let offset = raw.len() - rest.len() + amp;
                return Err(self.error(
                    at + offset,
                    format!(
                        "`&{entity};` is not an entity this reader knows; \
                         write & as &amp;, < as &lt; and > as &gt;"
                    ),
                ));
            };
            out.push(c);
            rest = &after[entity.len() + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn entity_char(entity: &str) -> Option<char> {
    match entity {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let number = entity.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// The XML name at the start of `text` (letters, digits, `_`, `-`, `.`, `:`).
fn xml_name(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
        .unwrap_or(text.len());
    &text[..end]
}

/// `text` trimmed, each line break with the spaces around it turned into one space.
fn join_lines(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn shorten(text: &str) -> String {
    cut(text, 40, CutMark::Ellipsis)
}

#[cfg(test)]
mod tests {
    use crate::{Plan, PlanError, PlanStep};

    const TOOLS: &[&str] = &["Documentalist", "FileSearch", "WebSearch"];

    fn parse(text: &str) -> Result<Plan, PlanError> {
        Plan::parse_xml(text, TOOLS, 10)
    }

    const EXAMPLE: &str = r#"Here is the plan:

```xml
<?xml version="1.0" encoding="UTF-8"?>
<plan>
  <step id="E0" tool="Documentalist">
    <arg name="vector_store">AI Engineer Basic Course Syllabus</arg>
  </step>
  <step id="E1" tool="FileSearch" reason="Find the course notes on prompts">
    <arg>Prompt engineering</arg>
    <arg name="vector_store">#E0</arg>
  </step>
  <step id="E2" tool="Documentalist">
    <arg name="url">https://example.org/a.html</arg>
    <arg name="keywords"><item>Agents</item><item>Planning</item></arg>
  </step>
</plan>
```
I hope it helps."#;

    #[test]
    fn reads_the_example_into_steps_with_canonical_arguments() {
        let plan = parse(EXAMPLE).unwrap();
        let expected = vec![
            PlanStep::new(
                "E0",
                "Documentalist",
                r#"vector_store="AI Engineer Basic Course Syllabus""#,
                None,
            ),
            PlanStep::new(
                "E1",
                "FileSearch",
                r#""Prompt engineering", vector_store=#E0"#,
                Some("Find the course notes on prompts".into()),
            ),
            PlanStep::new(
                "E2",
                "Documentalist",
                r#"url="https://example.org/a.html", keywords=["Agents", "Planning"]"#,
                None,
            ),
        ];
        assert_eq!(plan.steps, expected);
        assert_eq!(plan.steps[1].depends_on, vec!["E0".to_string()]);
        assert_eq!(plan.waves(), vec![vec![0, 2], vec![1]]);
        // The canonical line form reads back to the same plan.
        assert_eq!(Plan::parse(&plan.render(), TOOLS, 10), Ok(plan.clone()));
        assert_eq!(Plan::parse_any(EXAMPLE, TOOLS, 10), Ok(plan));
    }

    #[test]
    fn one_plain_value_gives_the_argument_the_line_form_gives() {
        let xml = Plan::parse_xml(
            "<plan><step id='#e1' tool='search'><arg>birthplace of\n   #E2</arg></step>\
             <step id='E2' tool='Search'><arg> director of &quot;The Visit&quot; </arg></step></plan>",
            &["Search"],
            5,
        )
        .unwrap();
        let line = Plan::parse(
            "#E1 = search[\"birthplace of #E2\"]\n#E2 = Search[director of \"The Visit\"]",
            &["Search"],
            5,
        )
        .unwrap();
        assert_eq!(xml, line);
        assert_eq!(xml.steps[0].argument, "birthplace of #E2");
        assert_eq!(xml.steps[1].argument, "director of \"The Visit\"");
    }

    #[test]
    fn decodes_entities_cdata_and_skips_comments() {
        let plan = parse(
            "<plan>\n<!-- the only step -->\n<step id=\"E1\" tool=\"WebSearch\" reason=\"a &amp; b\n   &lt;c&gt;\">\
             <arg>Q&amp;A &#233;&#xE9; &apos;x&apos; AT&T ?a=1&b=2</arg>\
             <arg><![CDATA[<raw> & \"quoted\"]]></arg></step></plan>",
        )
        .unwrap();
        let step = &plan.steps[0];
        assert_eq!(step.reasoning.as_deref(), Some("a & b <c>"));
        let arguments = step.arguments().unwrap();
        assert_eq!(
            arguments.positional,
            vec![
                crate::ArgumentValue::Text("Q&A éé 'x' AT&T ?a=1&b=2".into()),
                crate::ArgumentValue::Text("<raw> & \"quoted\"".into()),
            ]
        );
        assert_eq!(
            step.argument,
            r#""Q&A éé 'x' AT&T ?a=1&b=2", "<raw> & \"quoted\"""#
        );
    }

    #[test]
    fn parse_any_chooses_the_form() {
        let line = "#E1 = WebSearch[agents]";
        assert_eq!(Plan::parse_any(line, TOOLS, 3), Plan::parse(line, TOOLS, 3));
        let xml = "<plan>\n<step id=\"E1\" tool=\"WebSearch\"><arg>agents</arg></step>\n</plan>";
        assert_eq!(Plan::parse_any(xml, TOOLS, 3), Plan::parse(line, TOOLS, 3));
        // `<planning>` is not a plan element; an empty plan element has no steps.
        assert_eq!(
            Plan::parse_any("<planning>\n#E1 = WebSearch[agents]", TOOLS, 3),
            Plan::parse(line, TOOLS, 3)
        );
        assert_eq!(Plan::parse_any("<plan/>", TOOLS, 3), Err(PlanError::Empty));
        // A mention of <plan> in prose gives way to the element that begins a line.
        let mentioned = format!("I write the <plan> element below.\n{xml}");
        assert_eq!(
            Plan::parse_any(&mentioned, TOOLS, 3),
            Plan::parse(line, TOOLS, 3)
        );
    }

    #[test]
    fn the_plan_is_still_validated() {
        assert_eq!(
            parse("<plan><step id=\"E1\" tool=\"Browse\"><arg>x</arg></step></plan>"),
            Err(PlanError::UnknownTool {
                step: "E1".into(),
                tool: "Browse".into(),
                known: TOOLS.iter().map(|t| t.to_string()).collect(),
            })
        );
        assert_eq!(
            parse("<plan><step id=\"E1\" tool=\"WebSearch\"/></plan>"),
            Err(PlanError::EmptyArgument { step: "E1".into() })
        );
        assert_eq!(
            parse("<plan><step id=\"E1\" tool=\"WebSearch\"><arg>#E4</arg></step></plan>"),
            Err(PlanError::UndefinedVariable {
                step: "E1".into(),
                variable: "E4".into()
            })
        );
    }

    #[test]
    fn malformed_xml_names_the_line_step_and_fix() {
        let step = |body: &str| {
            format!("<plan>\n<step id=\"E1\" tool=\"WebSearch\">\n{body}\n</step>\n</plan>")
        };
        for (text, line, in_step, problem) in [
            (
                "no plan here".to_string(),
                1,
                None,
                "there is no <plan> element",
            ),
            (
                "<plan>\n<task id=\"E1\"/>\n</plan>".into(),
                2,
                None,
                "<task> is not allowed in a <plan>",
            ),
            (
                "<plan>\nfirst search\n</plan>".into(),
                2,
                None,
                "the text `first search` is outside a <step>",
            ),
            (
                "<plan>\n<step tool=\"WebSearch\"><arg>x</arg></step>\n</plan>".into(),
                2,
                None,
                "a <step> has no id; write <step id=\"E1\" tool=\"Tool\">",
            ),
            (
                "<plan>\n<step id=\"step1\" tool=\"WebSearch\"/>\n</plan>".into(),
                2,
                None,
                "the step id `step1` is not a step variable like E1",
            ),
            (
                "<plan>\n<step id=\"E3\">\n<arg>x</arg></step>\n</plan>".into(),
                2,
                Some("E3"),
                "the step has no tool",
            ),
            (
                "<plan>\n<step id=\"E3\" tool=\"WebSearch\" why=\"x\"/>\n</plan>".into(),
                2,
                Some("E3"),
                "<step> has no attribute `why`; use id, tool and reason",
            ),
            (
                step("<arg name=\"k\">Agents<item>Planning</item></arg>"),
                3,
                Some("E1"),
                "an <arg> mixes text and <item> elements",
            ),
            (
                step("<query>x</query>"),
                3,
                Some("E1"),
                "<query> is not allowed in a <step>, which holds only <arg> elements",
            ),
            (
                step("<arg>x <b>y</b></arg>"),
                3,
                Some("E1"),
                "<b> is not allowed in an <arg>",
            ),
            (
                step("<arg><item>x <b>y</b></item></arg>"),
                3,
                Some("E1"),
                "<b> is not allowed in an <item>, which holds only text",
            ),
            (step("<arg>  </arg>"), 3, Some("E1"), "an <arg> is empty"),
            (
                step("<arg>x</arg> loose text"),
                3,
                Some("E1"),
                "the text `loose text` is outside an <arg>",
            ),
            (
                step("<arg name=\"k\">x</arg>\n<arg name=\"k\">y</arg>"),
                4,
                Some("E1"),
                "`k` is given more than once",
            ),
            (
                step("<arg name=\"k\">x</arg>\n<arg>y</arg>"),
                4,
                Some("E1"),
                "put values without names first",
            ),
            (
                step("<arg name=\"my key\">x</arg>"),
                3,
                Some("E1"),
                "`my key` is not a valid argument name",
            ),
            (
                step("<arg>x</step>"),
                3,
                Some("E1"),
                "found </step> where <arg> should end; close it with </arg>",
            ),
            (
                "<plan>\n<step id=\"E1\" tool=\"WebSearch\">\n<arg>x</arg>".into(),
                2,
                Some("E1"),
                "<step> is not closed; end it with </step>",
            ),
            (
                step("<arg>a < b</arg>"),
                3,
                Some("E1"),
                "write a `<` inside a value as &lt;",
            ),
            (
                step("<arg>caf&eacute;</arg>"),
                3,
                Some("E1"),
                "`&eacute;` is not an entity this reader knows",
            ),
            (
                step("<arg name=k>x</arg>"),
                3,
                Some("E1"),
                "the value of `name` in <arg> is not quoted",
            ),
            (
                step("<arg name=\"a\" name=\"b\">x</arg>"),
                3,
                Some("E1"),
                "<arg> has the attribute `name` twice",
            ),
            (
                step("<arg name>x</arg>"),
                3,
                Some("E1"),
                "the attribute `name` of <arg> has no value",
            ),
            (
                step("<arg name=\"k>x</arg>"),
                3,
                Some("E1"),
                "the value of `name` in <arg> has no closing \"",
            ),
            (
                step("<!-- unclosed"),
                3,
                Some("E1"),
                "a comment is not closed",
            ),
            (
                step("<arg><![CDATA[x</arg>"),
                3,
                Some("E1"),
                "a CDATA section is not closed",
            ),
            (
                step("<arg>x</ arg>"),
                3,
                Some("E1"),
                "an end tag is malformed",
            ),
            (
                "<plan version=\"1\"></plan>".into(),
                1,
                None,
                "<plan> has no attribute `version`; it takes no attributes",
            ),
        ] {
            let error = parse(&text).unwrap_err();
            let PlanError::MalformedXml {
                step: got_step,
                line: got_line,
                problem: got_problem,
            } = &error
            else {
                panic!("{text}: expected MalformedXml, got {error:?}");
            };
            assert_eq!(
                (got_step.as_deref(), *got_line),
                (in_step, line),
                "{text}: {error}"
            );
            assert!(got_problem.contains(problem), "{text}: {error}");
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("line {line} of the XML plan")),
                "{message}"
            );
            if let Some(step) = in_step {
                assert!(message.contains(&format!("(step #{step})")), "{message}");
            }
        }
    }
}
