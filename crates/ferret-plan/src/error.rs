//! Why a plan was rejected: each message says what to fix, for the planner's repair request
//! and for users.

use ferret_core::text::{cut, CutMark};

/// Why a plan was rejected. Each message says what to fix: it is sent back to the planner in a
/// repair request and shown to users. Variables are named without `#` (`"E3"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The text contains no step at all.
    #[error("the plan has no steps; write each step on its own line as `#E1 = Tool[argument]`")]
    Empty,
    /// A line starts like a step (`#E<digits>`) but is not `#En = Tool[argument]`.
    #[error(
        "line {line} (`{}`) is not a valid step: {problem}; write step #{step} as `#{step} = Tool[argument]`",
        shorten(.text)
    )]
    Malformed {
        /// The variable the line starts with.
        step: String,
        /// The line's number in the text, from 1.
        line: usize,
        /// The line, trimmed.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Two steps have the same variable.
    #[error(
        "step #{step} is defined more than once; give every step its own number (#E1, #E2, ...)"
    )]
    DuplicateVariable {
        /// The repeated variable.
        step: String,
    },
    /// A step uses a tool that is not available.
    #[error("step #{step} uses tool `{tool}`, which is not one of: {}", tool_list(.known))]
    UnknownTool {
        /// The step.
        step: String,
        /// The tool as the plan wrote it.
        tool: String,
        /// The tools that are available.
        known: Vec<String>,
    },
    /// A step refers to a variable that no step defines.
    #[error("step #{step} uses #{variable}, but no step defines #{variable}; refer only to steps of this plan")]
    UndefinedVariable {
        /// The step.
        step: String,
        /// The undefined variable it refers to.
        variable: String,
    },
    /// A step depends on itself, directly or through other steps.
    #[error("{}", cycle_message(.steps))]
    Cycle {
        /// The variables of the cycle, each depending on the next and the last on the first,
        /// starting from the one written first.
        steps: Vec<String>,
    },
    /// The plan is longer than allowed.
    #[error("the plan has {count} steps but at most {max} are allowed; combine or drop steps")]
    TooManySteps {
        /// How many steps the plan has.
        count: usize,
        /// How many are allowed.
        max: usize,
    },
    /// A step's brackets are empty.
    #[error("step #{step} has nothing inside its brackets; write the tool's input as `#{step} = Tool[input]`")]
    EmptyArgument {
        /// The step.
        step: String,
    },
    /// A step's arguments do not follow the argument grammar or do not fit its tool's
    /// signature (see [`Plan::validate_arguments`]).
    #[error("step #{step} gives {tool} bad arguments: {problem}; {tool} takes {expected}")]
    BadArguments {
        /// The step.
        step: String,
        /// The tool it calls.
        tool: String,
        /// What is wrong.
        problem: String,
        /// What the tool takes, from its signature.
        expected: String,
    },
    /// An XML plan is not in the accepted format (see [`Plan::parse_xml`]).
    #[error("{}", xml_message(.step.as_deref(), *.line, .problem))]
    MalformedXml {
        /// The step being read, once its id is known.
        step: Option<String>,
        /// The line of the problem in the text, from 1.
        line: usize,
        /// What is wrong and how to write it.
        problem: String,
    },
}

fn cycle_message(steps: &[String]) -> String {
    match steps {
        [] => "the plan's steps depend on each other in a cycle".to_string(),
        [only] => format!(
            "step #{only} uses its own result #{only}; a step can only use the results of other steps"
        ),
        [first, ..] => {
            let names: Vec<String> = steps.iter().map(|s| format!("#{s}")).collect();
            format!(
                "steps {} depend on each other in a cycle ({}, which uses #{first}); \
                 a step can only use results of steps that can run before it",
                names.join(", "),
                names.join(", which uses ").replacen(", which uses ", " uses ", 1),
            )
        }
    }
}

fn xml_message(step: Option<&str>, line: usize, problem: &str) -> String {
    match step {
        Some(step) => format!("line {line} of the XML plan (step #{step}): {problem}"),
        None => format!("line {line} of the XML plan: {problem}"),
    }
}

fn tool_list(known: &[String]) -> String {
    if known.is_empty() {
        "(no tools are available)".to_string()
    } else {
        known.join(", ")
    }
}

/// `text` cut to 120 characters, for quoting a line in a message.
fn shorten(text: &str) -> String {
    cut(text, 120, CutMark::Ellipsis)
}
