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
mod tests;
