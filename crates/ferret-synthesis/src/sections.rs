//! The shape of an answer to an error: Root Cause, Solution, Code/Config Changes and Sources, each
//! sentence keeping its markers, so every claim still cites.

use std::sync::LazyLock;

use regex::Regex;

use ferret_core::text::one_line;
use ferret_core::Hit;

use crate::actions::BUILD_FILES;
use crate::{split_sentences, strip_markers, Answer};

/// Sentences that tell the reader to do something.
static SOLUTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:upgrad\w*|updat\w*|downgrad\w*|replac\w*|switch\w*|migrat\w*|install\w*|remov\w*|add|set|use|fix\w*|solv\w*|resolv\w*|instead|should|must|need to)\b")
        .expect("valid regex")
});
/// Sentences about build files, configuration or commands.
static CODE_OR_CONFIG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:{BUILD_FILES}|mvn|gradlew?|npm|pip|<\w+>|@\w+)"
    ))
    .expect("valid regex")
});

/// Sentences a cited source adds to a section the answer leaves empty.
const MAX_ADDED_PER_SECTION: usize = 2;

/// `answer` arranged in sections: what the cause is, what to do, which files or commands change,
/// and the sources its markers point at. When the answer says nothing of what to do, the sources
/// it cites (found in `hits`) lend their sentences that do, each with that source's marker. An
/// answer already in sections (a model wrote headings) or one without citations stays as it is.
/// The citations do not change: every marker in the sections is one the answer had.
pub fn in_sections(answer: Answer, hits: &[Hit]) -> Answer {
    if answer.citations.is_empty()
        || answer.text.contains("\n## ")
        || answer.text.starts_with("## ")
    {
        return answer;
    }
    let (mut cause, mut solution, mut changes) = (Vec::new(), Vec::new(), Vec::new());
    for sentence in split_sentences(&answer.text) {
        if CODE_OR_CONFIG.is_match(&sentence) {
            changes.push(sentence);
        } else if SOLUTION.is_match(&sentence) {
            solution.push(sentence);
        } else {
            cause.push(sentence);
        }
    }
    // What to do, from the cited sources, when the answer's own sentences do not say.
    let said = one_line(&strip_markers(&answer.text));
    for citation in &answer.citations {
        let Some(hit) = hits.iter().find(|h| h.id == citation.hit_id) else {
            continue;
        };
        for sentence in split_sentences(&hit.text) {
            let sentence = strip_markers(&sentence).trim().to_owned();
            if said.contains(&one_line(sentence.trim_end_matches('.'))) {
                continue;
            }
            let cited = match sentence.strip_suffix('.') {
                Some(body) => format!("{body} [{}].", citation.marker),
                None => format!("{sentence} [{}]", citation.marker),
            };
            if CODE_OR_CONFIG.is_match(&sentence) && changes.len() < MAX_ADDED_PER_SECTION {
                changes.push(cited);
            } else if SOLUTION.is_match(&sentence) && solution.len() < MAX_ADDED_PER_SECTION {
                solution.push(cited);
            }
        }
    }
    let mut text = String::new();
    for (heading, sentences) in [
        ("Root Cause", cause),
        ("Solution", solution),
        ("Code/Config Changes", changes),
    ] {
        if !sentences.is_empty() {
            text.push_str(&format!("## {heading}\n{}\n\n", sentences.join(" ")));
        }
    }
    text.push_str("## Sources\n");
    for citation in &answer.citations {
        let address = citation
            .url
            .as_deref()
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        text.push_str(&format!(
            "- [{}] {}{address}\n",
            citation.marker, citation.title
        ));
    }
    Answer {
        text: text.trim_end().to_owned(),
        ..answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check_citations;

    #[test]
    fn an_error_answer_reads_as_cause_solution_changes_and_sources() {
        let mut so = Hit::new("so", "cglib on JDK 17", "", 1.0, "web");
        so.url = Some("https://stackoverflow.com/q/1".into());
        let docs = Hit::new("docs", "Spring Boot requirements", "", 1.0, "web");
        let answer = check_citations(
            "Spring Boot 1.x repackages a CGLIB that fails on JDK 17 [1]. Upgrade Spring Boot to 2.7 [2]. Change the parent version in pom.xml [1].",
            &[so, docs],
        );
        let sectioned = in_sections(answer.clone(), &[]);
        assert_eq!(
            sectioned.text,
            "## Root Cause\nSpring Boot 1.x repackages a CGLIB that fails on JDK 17 [1].\n\n\
             ## Solution\nUpgrade Spring Boot to 2.7 [2].\n\n\
             ## Code/Config Changes\nChange the parent version in pom.xml [1].\n\n\
             ## Sources\n- [1] cglib on JDK 17 (https://stackoverflow.com/q/1)\n- [2] Spring Boot requirements"
        );
        assert_eq!(sectioned.citations, answer.citations);
        assert_eq!(
            in_sections(sectioned.clone(), &[]).text,
            sectioned.text,
            "already in sections"
        );
    }

    #[test]
    fn a_cited_source_lends_what_to_do_when_the_answer_only_explains() {
        let so = Hit::new(
            "so",
            "cglib on JDK 17",
            "CGLIB fails on JDK 17. Upgrade Spring Boot to 2.7.18, then run mvn clean install -U.",
            1.0,
            "web",
        );
        let answer = check_citations(
            "CGLIB fails on JDK 17 [1]. Upgrade Spring Boot to 2.7.18, then run mvn clean install -U [1].",
            std::slice::from_ref(&so),
        );
        let again = in_sections(answer, std::slice::from_ref(&so));
        assert_eq!(
            again.text.matches("Upgrade Spring Boot").count(),
            1,
            "a sentence the answer has is not lent again: {}",
            again.text
        );
        let answer = check_citations("CGLIB fails on JDK 17 [1].", std::slice::from_ref(&so));
        let sectioned = in_sections(answer, &[so]);
        assert!(
            sectioned.text.contains("## Code/Config Changes\nUpgrade Spring Boot to 2.7.18, then run mvn clean install -U [1]."),
            "{}",
            sectioned.text
        );
        assert!(sectioned
            .text
            .starts_with("## Root Cause\nCGLIB fails on JDK 17 [1]."));
    }
}
