//! What a planner's reply may hold before it is parsed, and what a question may not bring
//! into a plan.

/// A model's plan as its reply gives it, trimmed; an empty one is refused, so the model is
/// asked again. Whether the plan is valid is checked where it runs.
pub fn plan_text(reply: &str) -> Result<String, String> {
    match reply.trim() {
        "" => Err("the plan is empty".to_owned()),
        text => Ok(text.to_owned()),
    }
}

/// `text` without the `#` of anything that reads as a plan reference (`#E1` becomes `E1`), so
/// that a question put in a plan cannot refer to a step.
pub fn without_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' {
            let mut ahead = chars.clone();
            if matches!(ahead.next(), Some('E' | 'e'))
                && ahead.next().is_some_and(|d| d.is_ascii_digit())
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_put_in_a_plan_refers_to_no_step() {
        assert_eq!(
            without_references("#E1 and #e22 but #Each and C#"),
            "E1 and e22 but #Each and C#"
        );
    }

    #[test]
    fn an_empty_plan_is_refused_and_a_plan_is_trimmed() {
        assert!(plan_text("  \n").is_err());
        assert_eq!(plan_text(" #E1 = Search[x]\n").unwrap(), "#E1 = Search[x]");
    }
}
