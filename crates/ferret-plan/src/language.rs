//! ReWOO-style plans: parsing, validation and scheduling.
//!
//! A planner (an LLM, or a heuristic) writes the whole plan up front, as lines like
//! `#E2 = Search[birthplace of #E1]`, each optionally preceded by a `Plan: ...` line giving its
//! reason. [`Plan::parse`] reads that text into steps with explicit dependencies and checks the
//! plan *before* anything runs: a bad plan costs one repair request to the planner instead of
//! wasted tool calls. Its [`PlanError`] messages say what to fix, because they are sent back to
//! the planner and shown to users. [`Plan::waves`] groups the steps into layers that can run
//! concurrently, and [`substitute`] fills a step's `#En` references with earlier results.
//!
//! The parser is tolerant of what small models write (code fences, surrounding prose, list
//! numbering, lower case, quoted arguments) but strict about a line that starts like a step and
//! is not one, so that a step is never silently dropped.
//!
//! The same plan may be written as XML (`<plan><step id="E1" tool="Search"><arg>...</arg>
//! </step></plan>`, see the `xml` module), read by [`Plan::parse_xml`] into the same steps;
//! [`Plan::parse_any`] takes either. A step's bracket text may hold several values, named
//! ones and lists (`Tool["text", name=["a", "b"], store=#E0]`): [`PlanStep::arguments`] reads
//! them by the grammar of the `arguments` module, and [`Plan::validate_arguments`] checks them
//! against the tools' [`ToolSignature`]s.

use std::collections::{HashMap, HashSet};

use crate::arguments::{ArgumentError, StepArguments, ToolSignature};
use crate::error::PlanError;
use crate::xml;

/// One step of a plan: `#E2 = Search[birthplace of #E1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// The step's variable without the `#`, with an upper-case `E`: `"E2"`.
    pub variable: String,
    /// The tool to call, spelled as in the tool list the plan was checked against.
    pub tool: String,
    /// The raw text inside the brackets, trimmed and with one pair of surrounding quotes
    /// removed. References such as `#E1` are kept as written; see [`substitute`].
    pub argument: String,
    /// The text of the `Plan:` line just before the step, if there was one.
    pub reasoning: Option<String>,
    /// The variables `argument` refers to (`"E1"`), deduplicated, in order of first use.
    pub depends_on: Vec<String>,
}

impl PlanStep {
    /// A step built by code (a heuristic planner) rather than parsed: a leading `#` on
    /// `variable` is dropped, `argument` is trimmed, and `depends_on` is computed from it.
    pub fn new(
        variable: impl Into<String>,
        tool: impl Into<String>,
        argument: impl Into<String>,
        reasoning: Option<String>,
    ) -> Self {
        let variable = variable.into();
        let variable = variable.strip_prefix('#').unwrap_or(&variable).to_string();
        let argument = argument.into().trim().to_string();
        let depends_on = references(&argument);
        Self {
            variable,
            tool: tool.into(),
            argument,
            reasoning,
            depends_on,
        }
    }

    /// The step's values, read from `argument` by the argument grammar: positional values,
    /// then named ones. A plain argument such as `birthplace of #E1` is one text value.
    pub fn arguments(&self) -> Result<StepArguments, ArgumentError> {
        StepArguments::parse(&self.argument)
    }
}

/// A checked plan: its steps in the order the planner wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The steps, in text order (which need not be execution order: see [`Plan::waves`]).
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// Reads and checks a plan written by a planner.
    ///
    /// `tools` are the tool names the plan may use; a step's tool is matched ignoring case and
    /// rewritten with the spelling in `tools`. At most `max_steps` steps are allowed.
    ///
    /// Lines that are neither a step (`#E1 = Tool[argument]`) nor a `Plan:` line are ignored,
    /// so code fences and prose around the plan do no harm; list markers (`1.`, `-`, `*`,
    /// `Step 1:`), `**bold**` and backticks around a line are skipped. The argument runs up to
    /// the *last* `]` of the line, so it may contain brackets. A line that starts like a step
    /// (`#E<digits>`) but is not one is an error, as is any failure of [`Plan::validate`].
    pub fn parse(text: &str, tools: &[&str], max_steps: usize) -> Result<Plan, PlanError> {
        let mut steps = Vec::new();
        let mut reasoning: Option<String> = None;
        for (index, raw) in text.lines().enumerate() {
            let Some(line) = normalise_line(raw) else {
                continue;
            };
            let parsed = if let Some(rest) = plan_line(&line) {
                match split_inline_step(rest) {
                    Some((before, step)) => {
                        reasoning = non_empty(before);
                        Some(step)
                    }
                    None => {
                        reasoning = non_empty(rest);
                        None
                    }
                }
            } else if starts_like_step(&line) {
                match parse_step(&line) {
                    Ok(step) => Some(step),
                    Err((step, problem)) => {
                        return Err(PlanError::Malformed {
                            step,
                            line: index + 1,
                            text: raw.trim().to_string(),
                            problem: problem.to_string(),
                        })
                    }
                }
            } else {
                None
            };
            if let Some(RawStep {
                variable,
                tool,
                argument,
            }) = parsed
            {
                steps.push(build_step(
                    variable,
                    &tool,
                    argument,
                    reasoning.take(),
                    tools,
                ));
            }
        }
        Plan::checked(steps, tools, max_steps)
    }

    /// Reads and checks a plan written in XML (the format is described in `planner/xml.rs`):
    /// each `<step>` becomes the step the line form would give, its `argument` the canonical
    /// bracket text of its `<arg>` values ([`StepArguments::render`]) and its reasoning the
    /// `reason` attribute; then [`Plan::validate`] runs as for [`Plan::parse`]. Prose, code
    /// fences and an XML declaration around the `<plan>` element are ignored; inside it, an
    /// unknown element or attribute, a step without id or tool, or an `<arg>` mixing text and
    /// `<item>`s is a [`PlanError::MalformedXml`] naming the line and step.
    pub fn parse_xml(text: &str, tools: &[&str], max_steps: usize) -> Result<Plan, PlanError> {
        let steps = xml::read_plan(text)?
            .into_iter()
            .map(|step| {
                build_step(
                    step.variable,
                    &step.tool,
                    step.arguments.render(),
                    step.reasoning,
                    tools,
                )
            })
            .collect();
        Plan::checked(steps, tools, max_steps)
    }

    /// Reads a plan in either form: [`Plan::parse_xml`] when `text` contains a `<plan>` element
    /// (`<plan>`, `<plan/>` or `<plan` and attributes), [`Plan::parse`] otherwise.
    pub fn parse_any(text: &str, tools: &[&str], max_steps: usize) -> Result<Plan, PlanError> {
        if xml::plan_start(text).is_some() {
            Plan::parse_xml(text, tools, max_steps)
        } else {
            Plan::parse(text, tools, max_steps)
        }
    }

    fn checked(steps: Vec<PlanStep>, tools: &[&str], max_steps: usize) -> Result<Plan, PlanError> {
        let plan = Plan { steps };
        plan.validate(tools, max_steps)?;
        Ok(plan)
    }

    /// Checks the arguments of every step whose tool has a signature in `signatures` (matched
    /// ignoring case), in text order: they must follow the argument grammar and fit the
    /// signature. Steps of other tools, such as the search tools taking one plain query, are
    /// not checked. The first problem is a [`PlanError::BadArguments`].
    pub fn validate_arguments(&self, signatures: &[ToolSignature<'_>]) -> Result<(), PlanError> {
        for step in &self.steps {
            let Some(signature) = signatures.iter().find(|s| s.applies_to(&step.tool)) else {
                continue;
            };
            let problem = match step.arguments() {
                Ok(arguments) => signature.check(&arguments).err(),
                Err(error) => Some(error.to_string()),
            };
            if let Some(problem) = problem {
                return Err(PlanError::BadArguments {
                    step: step.variable.clone(),
                    tool: step.tool.clone(),
                    problem,
                    expected: signature.describe(),
                });
            }
        }
        Ok(())
    }

    /// Checks a plan, whether parsed or built by code, and returns the first problem: no steps,
    /// more than `max_steps` steps, then per step in text order a duplicate variable, a tool not
    /// spelled exactly as in `tools`, an empty argument, a reference to a variable no step
    /// defines; last, a step depending on itself or a dependency cycle. A reference to a step
    /// written later in the text is allowed.
    pub fn validate(&self, tools: &[&str], max_steps: usize) -> Result<(), PlanError> {
        if self.steps.is_empty() {
            return Err(PlanError::Empty);
        }
        if self.steps.len() > max_steps {
            return Err(PlanError::TooManySteps {
                count: self.steps.len(),
                max: max_steps,
            });
        }
        let defined: HashSet<&str> = self.steps.iter().map(|s| s.variable.as_str()).collect();
        let mut seen = HashSet::new();
        for step in &self.steps {
            if !seen.insert(step.variable.as_str()) {
                return Err(PlanError::DuplicateVariable {
                    step: step.variable.clone(),
                });
            }
            if !tools.contains(&step.tool.as_str()) {
                return Err(PlanError::UnknownTool {
                    step: step.variable.clone(),
                    tool: step.tool.clone(),
                    known: tools.iter().map(|t| t.to_string()).collect(),
                });
            }
            if step.argument.trim().is_empty() {
                return Err(PlanError::EmptyArgument {
                    step: step.variable.clone(),
                });
            }
            if let Some(missing) = step
                .depends_on
                .iter()
                .find(|d| !defined.contains(d.as_str()))
            {
                return Err(PlanError::UndefinedVariable {
                    step: step.variable.clone(),
                    variable: missing.clone(),
                });
            }
        }
        let (_, stuck) = layers(&self.steps);
        if !stuck.is_empty() {
            return Err(PlanError::Cycle {
                steps: find_cycle(&self.steps, &stuck),
            });
        }
        Ok(())
    }

    /// Indexes into `steps`, grouped in layers that can each run concurrently: every step's
    /// dependencies are in earlier layers, and within a layer steps keep their text order.
    ///
    /// For a valid plan every step appears exactly once. For an invalid plan built by code,
    /// references to undefined variables are ignored and steps caught in a cycle are left out;
    /// call [`Plan::validate`] first.
    pub fn waves(&self) -> Vec<Vec<usize>> {
        layers(&self.steps).0
    }

    /// The canonical text of the plan: for each step a `Plan: ...` line when it has reasoning,
    /// then `#E1 = Tool[argument]`. [`Plan::parse`] reads it back to an equal plan.
    ///
    /// Line breaks inside reasoning or an argument are written as spaces (a parsed plan has
    /// none). An argument that is itself wrapped in quotes is written inside one more pair of
    /// quotes, so that parsing keeps its own; this fails only if such an argument contains
    /// every quote character the parser knows.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            if let Some(reasoning) = &step.reasoning {
                let reasoning = without_line_breaks(reasoning);
                if !reasoning.is_empty() {
                    out.push_str("Plan: ");
                    out.push_str(&reasoning);
                    out.push('\n');
                }
            }
            let argument = without_line_breaks(&step.argument);
            let argument = match unquote(&argument) {
                Some(_) => QUOTES
                    .iter()
                    .find(|(open, close)| !argument.contains(*open) && !argument.contains(*close))
                    .map_or(argument.clone(), |(open, close)| {
                        format!("{open}{argument}{close}")
                    }),
                None => argument,
            };
            out.push_str(&format!(
                "#{} = {}[{}]\n",
                step.variable, step.tool, argument
            ));
        }
        out
    }
}

/// Replaces each reference `#En` in `argument` (or `#en`) with the result of step `En` from
/// `results` (keyed by variable without `#`: `"E1"`). A reference is a whole token: `#E1` does
/// not match inside `#E12`. References without a result are left as written, and result text
/// is inserted as is, never searched for further references.
pub fn substitute(argument: &str, results: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(argument.len());
    let mut copied = 0;
    for (start, end) in reference_spans(argument) {
        let variable = format!("E{}", &argument[start + 2..end]);
        if let Some(result) = results.get(&variable) {
            out.push_str(&argument[copied..start]);
            out.push_str(result);
            copied = end;
        }
    }
    out.push_str(&argument[copied..]);
    out
}

/// Pairs of quotes the parser strips from around an argument, and render may add.
const QUOTES: [(char, char); 5] = [('"', '"'), ('\'', '\''), ('`', '`'), ('“', '”'), ('‘', '’')];

/// A step as read from one line, before its tool is normalised.
struct RawStep {
    variable: String,
    tool: String,
    argument: String,
}

/// The line without list markers, emphasis and surrounding backticks; `None` for a code fence.
fn normalise_line(raw: &str) -> Option<String> {
    let mut line = raw.trim().to_string();
    if line.starts_with("```") || line.starts_with("~~~") {
        return None;
    }
    loop {
        let before = line.len();
        line = strip_list_marker(&line).trim_start().to_string();
        for marker in ["**", "__"] {
            if let Some(rest) = line.strip_prefix(marker) {
                line = rest.replacen(marker, "", 1);
            }
        }
        if let Some(rest) = line.strip_prefix('`') {
            line = rest.strip_suffix('`').unwrap_or(rest).to_string();
        }
        line = line.trim().to_string();
        if line.len() == before {
            return Some(line);
        }
    }
}

/// `line` without one leading `-`, `*`, `+`, `•`, `1.`, `1)`, `1:` or `Step 1:`.
fn strip_list_marker(line: &str) -> &str {
    let followed_by_gap = |rest: &str| {
        rest.is_empty() || rest.starts_with(char::is_whitespace) || rest.starts_with('#')
    };
    for bullet in ['-', '*', '+', '•'] {
        if let Some(rest) = line.strip_prefix(bullet) {
            if followed_by_gap(rest) {
                return rest;
            }
        }
    }
    let mut rest = line;
    if rest
        .get(..4)
        .is_some_and(|head| head.eq_ignore_ascii_case("step"))
    {
        rest = rest[4..].trim_start();
    }
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 {
        let after = &rest[digits..];
        for end in ['.', ')', ':'] {
            if let Some(after) = after.strip_prefix(end) {
                if followed_by_gap(after) {
                    return after;
                }
            }
        }
    }
    line
}

/// The text after `Plan:` (any case), if `line` is a plan line.
fn plan_line(line: &str) -> Option<&str> {
    let head = line.get(..5)?;
    head.eq_ignore_ascii_case("plan:").then(|| line[5..].trim())
}

/// Splits `Plan: reason #E1 = Tool[argument]` written on one line, when the tail is a step.
fn split_inline_step(rest: &str) -> Option<(&str, RawStep)> {
    rest.match_indices('#').find_map(|(at, _)| {
        let tail = &rest[at..];
        if !starts_like_step(tail) {
            return None;
        }
        parse_step(tail).ok().map(|step| (&rest[..at], step))
    })
}

/// True when `line` begins with `#E` or `#e` followed by a digit.
fn starts_like_step(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.len() >= 3
        && bytes[0] == b'#'
        && matches!(bytes[1], b'E' | b'e')
        && bytes[2].is_ascii_digit()
}

/// Reads `#En = Tool[argument]`; on failure returns the variable and what is wrong.
/// `line` must satisfy [`starts_like_step`].
fn parse_step(line: &str) -> Result<RawStep, (String, &'static str)> {
    let digits = line[2..].len()
        - line[2..]
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    let variable = format!("E{}", &line[2..2 + digits]);
    let rest = line[2 + digits..].trim_start();
    let Some(rest) = rest.strip_prefix('=') else {
        return Err((variable, "expected `=` after the variable"));
    };
    let Some((tool, rest)) = rest.split_once('[') else {
        return Err((variable, "expected `Tool[argument]` after `=`"));
    };
    let tool = tool.trim();
    if tool.is_empty() {
        return Err((variable, "the tool name before `[` is missing"));
    }
    let Some(close) = rest.rfind(']') else {
        return Err((variable, "the closing `]` is missing"));
    };
    let argument = rest[..close].trim();
    let argument = unquote(argument).unwrap_or(argument).trim().to_string();
    Ok(RawStep {
        variable,
        tool: tool.to_string(),
        argument,
    })
}

/// The inside of `text` when it is wrapped in one pair of [`QUOTES`] that does not occur inside.
fn unquote(text: &str) -> Option<&str> {
    QUOTES.iter().find_map(|&(open, close)| {
        let inner = text.strip_prefix(open)?.strip_suffix(close)?;
        (!inner.contains(open) && !inner.contains(close)).then_some(inner)
    })
}

/// A step read from either form: the tool spelled as in `tools` when it matches one ignoring
/// case, and the dependencies found in `argument`.
fn build_step(
    variable: String,
    tool: &str,
    argument: String,
    reasoning: Option<String>,
    tools: &[&str],
) -> PlanStep {
    PlanStep {
        variable,
        tool: canonical_tool(tool, tools),
        depends_on: references(&argument),
        argument,
        reasoning,
    }
}

/// The spelling of `tool` in `tools`: an exact match, else the first match ignoring case, else
/// `tool` unchanged (validation then reports it).
fn canonical_tool(tool: &str, tools: &[&str]) -> String {
    let lower = tool.to_lowercase();
    tools
        .iter()
        .find(|t| **t == tool)
        .or_else(|| tools.iter().find(|t| t.to_lowercase() == lower))
        .copied()
        .unwrap_or(tool)
        .to_string()
}

/// Byte ranges of the references `#En` / `#en` in `text`, each with its whole run of digits.
fn reference_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if starts_like_step(&text[i..]) {
            let mut end = i + 2;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            spans.push((i, end));
            i = end;
        } else {
            i += 1;
            while i < bytes.len() && !text.is_char_boundary(i) {
                i += 1;
            }
        }
    }
    spans
}

/// The variables `text` refers to, as `"E1"`, deduplicated, in order of first use.
fn references(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (start, end) in reference_spans(text) {
        let variable = format!("E{}", &text[start + 2..end]);
        if !out.contains(&variable) {
            out.push(variable);
        }
    }
    out
}

/// Topological layers of `steps` (indexes, text order within a layer), and the steps that
/// never become ready because they are in or behind a cycle. Unknown references are ignored.
fn layers(steps: &[PlanStep]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let deps = dependency_indexes(steps);
    let mut done = vec![false; steps.len()];
    let mut waves: Vec<Vec<usize>> = Vec::new();
    loop {
        let ready: Vec<usize> = (0..steps.len())
            .filter(|&i| !done[i] && deps[i].iter().all(|&d| done[d]))
            .collect();
        if ready.is_empty() {
            break;
        }
        for &i in &ready {
            done[i] = true;
        }
        waves.push(ready);
    }
    let stuck = (0..steps.len()).filter(|&i| !done[i]).collect();
    (waves, stuck)
}

/// For each step, the indexes of the steps it depends on (the first step of each variable).
fn dependency_indexes(steps: &[PlanStep]) -> Vec<Vec<usize>> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        index.entry(step.variable.as_str()).or_insert(i);
    }
    steps
        .iter()
        .map(|s| {
            s.depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect()
}

/// One cycle among the `stuck` steps (each of which depends on another stuck step), as
/// variables in dependency order, starting from the step written first.
fn find_cycle(steps: &[PlanStep], stuck: &[usize]) -> Vec<String> {
    let deps = dependency_indexes(steps);
    let stuck_set: HashSet<usize> = stuck.iter().copied().collect();
    let mut path: Vec<usize> = Vec::new();
    let mut current = stuck[0];
    let cycle = loop {
        if let Some(at) = path.iter().position(|&p| p == current) {
            break path.split_off(at);
        }
        path.push(current);
        match deps[current].iter().find(|d| stuck_set.contains(d)) {
            Some(&next) => current = next,
            // Unreachable for steps left by `layers`; report the path rather than panic.
            None => break path,
        }
    };
    let first = cycle
        .iter()
        .enumerate()
        .min_by_key(|&(_, &i)| i)
        .map_or(0, |(at, _)| at);
    cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .map(|&i| steps[i].variable.clone())
        .collect()
}

/// `text` on one line with its spacing kept, so that a rendered plan parses back to itself.
fn without_line_breaks(text: &str) -> String {
    text.replace(['\r', '\n'], " ").trim().to_string()
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
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
        let reasoning = proptest::option::of(
            "[A-Za-z][A-Za-z0-9 ,.?'-]{0,30}".prop_map(|s| s.trim().to_string()),
        );
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
            "Plan:", "plan:", "1.", "- ", "**", "Search", "recent", "Browse", "Step 3:", "\n",
            "\r\n", " ", "x", "é", "日本",
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
}
