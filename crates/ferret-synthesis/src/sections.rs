//! The shape of an answer to an error: Root Cause, Solution, Code/Config Changes, Alternatives
//! and Sources, each sentence keeping its markers, so every claim still cites.

use std::sync::LazyLock;

use regex::Regex;

use ferret_core::text::one_line;
use ferret_core::{Citation, Hit};

use crate::actions::BUILD_FILES;
use crate::citations::markers_in;
use crate::{split_sentences, strip_markers, Answer};

/// Sentences that advise, wherever the advice sits in them.
static ADVICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:(?:fixed|solved|resolved) (?:it )?by|also works|works (?:too|as well)|worked for me|you (?:should|must|need to|have to|can|could|may want to)|should be|must be|needs? to be|instead|recommend\w*|the (?:fix|solution|workaround) is|to fix (?:this|it)|to solve (?:this|it)|fixe[sd] (?:it|this|the)|solve[sd] (?:it|this|the)|resolve[sd] (?:it|this|the))\b")
        .expect("valid regex")
});
/// A sentence that opens with what to do ("Upgrade …", "To fix it, run …", "You can pin …"):
/// advice, whatever causes it names on the way.
static IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\W*(?i:(?:to fix (?:this|it)|to solve (?:this|it)|to [a-z]+(?: [a-z]+){0,4},|the fix is to|the solution is to|fix|solution|workaround|alternatively|instead|otherwise|then|first|simply|just|so|either|or|for [^,:]{1,40}[,:])\b[,:]?\s*)*(?i:(?:you|we)\s+(?:can|could|should|must|need to|have to|may)\s+)?(?:(?i:upgrad\w*|updat\w*|downgrad\w*|replac\w*|switch|migrat\w*|install|remov\w*|add|set|use|run|pin|bump|reinstall|delete|clear|change|move|rebuild|regenerate|enable|disable|configure|specify|declare|wrap|call|import|rename|point|initiali[sz]e|create|check)\b|(?:sudo|apt|apt-get|brew|pip|npm|yarn|pnpm|cargo|go|dotnet|mvn|gradle|\./gradlew)\s)")
        .expect("valid regex")
});
/// Sentences that say why: what changed, was removed, is missing or does not fit together.
static CAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:not present|(?:does not|doesn't|do not|don't) (?:have|contain|include|provide|ship)|(?:\w+n't|not) (?:\w+ )?(?:installed|found|available|defined|initiali[sz]ed|exported)|no longer|treats? [\w ]{1,40} as an error|occurs?|happens?|means|is thrown|is raised|(?:are|is) not in|lives? in|not (?:linked|included|part of)|so the \w+ reports|because|caused by|cause[sd]?|due to|removed|deprecated|dropped|renamed|no longer|incompatib\w*|not compatible|breaking|changed|introduced|only supports?|does(?: not|n't) support|not supported|unsupported|was compiled|compiled (?:by|with|for)|missing|(?:is|are|was|were) not (?:found|installed|available)|cannot be found|could not be found|expects?|mismatch\w*|conflicts? with|requires? (?:a )?(?:newer|older|at least)|stopped|became|now (?:requires|returns|raises|is|uses))\b")
        .expect("valid regex")
});
/// Sentences about build files, configuration or commands.
static CODE_OR_CONFIG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:{BUILD_FILES}|mvn|gradlew?|npm|pip|apt-get|apt|dnf|brew|gcc|cargo|go (?:get|mod)|dotnet (?:add|new)|<\w+>|@\w+)\b|`[^`]+`"
    ))
    .expect("valid regex")
});
/// Advice offered beside the main fix: pinning or going back, a workaround, another way.
static ALTERNATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:alternatively|otherwise|or you can|you can also|another (?:option|way|fix|solution)|workaround|stopgap|if you can(?:no|')t|if upgrading|temporar\w*|pin\w*|downgrad\w*|roll(?:ing)? back|older version|previous version)\b")
        .expect("valid regex")
});
/// A page of release notes: its lines say what changed, which is a cause, not advice.
static CHANGELOG_PAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)change-?log|^changes\b|/changes/?$|(?:CHANGES|HISTORY|NEWS)\.(?:md|rst|txt)|release[ -_]?notes|/releases(?:/|$)|what'?s new|^version history")
        .expect("valid regex")
});
/// A changelog entry's own marks: an issue or pull request reference.
static CHANGELOG_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\(#\d+\)|\s#\d+\.?$|:(?:pr|issue):`?\d+)").expect("valid regex")
});

/// Sentences a cited source adds to a section the answer leaves empty.
const MAX_ADDED_PER_SECTION: usize = 2;
/// Sources the answer leaves uncited that may offer their fix as an alternative.
const MAX_OTHER_SOURCES: usize = 2;

/// A section of an error's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Cause,
    Solution,
    Changes,
    Alternative,
}

/// Is `hit` a page of release notes (a changelog, a project's releases)?
fn is_changelog(hit: &Hit) -> bool {
    CHANGELOG_PAGE.is_match(&hit.title)
        || hit
            .url
            .as_deref()
            .is_some_and(|u| CHANGELOG_PAGE.is_match(u))
}

/// Where `sentence` belongs. A changelog's line says what changed (a cause), even when it reads
/// "Remove soft_unicode"; a sentence that opens with what to do, or advises, is advice (an
/// alternative, a change to files or commands, or the solution), whatever cause it names on the
/// way; one that says why is the cause; one about files or commands is a change; the rest is
/// the cause.
fn part_of(sentence: &str, from_changelog: bool) -> Part {
    let bare = strip_markers(sentence);
    let bare = bare.trim();
    if from_changelog || CHANGELOG_LINE.is_match(bare) {
        return Part::Cause;
    }
    // "Use of soft_unicode was deprecated …" opens with a noun, not an order.
    let imperative = IMPERATIVE.is_match(bare) && !bare.to_lowercase().starts_with("use of ");
    let advice = imperative || ADVICE.is_match(bare);
    if !advice && CAUSE.is_match(bare) {
        return Part::Cause;
    }
    if advice && ALTERNATIVE.is_match(bare) {
        return Part::Alternative;
    }
    if CODE_OR_CONFIG.is_match(bare) {
        return Part::Changes;
    }
    if advice {
        return Part::Solution;
    }
    Part::Cause
}

/// Does `sentence` state a cause outright (not only stand in the cause's section)?
fn states_cause(sentence: &str) -> bool {
    let bare = strip_markers(sentence);
    let bare = bare.trim();
    part_of(bare, false) == Part::Cause && (CAUSE.is_match(bare) || CHANGELOG_LINE.is_match(bare))
}

/// The sentences of `hit` that state a cause, the answer has not `said`, at most two.
fn cause_sentences(hit: &Hit, said: &str) -> Vec<String> {
    let changelog = is_changelog(hit);
    split_sentences(&hit.text)
        .into_iter()
        .map(|s| strip_markers(&s).trim().to_owned())
        .filter(|s| !s.is_empty() && !said.contains(&one_line(s.trim_end_matches('.'))))
        .filter(|s| {
            if changelog {
                part_of(s, true) == Part::Cause
            } else {
                states_cause(s)
            }
        })
        .take(MAX_ADDED_PER_SECTION)
        .collect()
}

/// `sentence` with `marker` before its full stop.
fn cite(sentence: &str, marker: usize) -> String {
    match sentence.strip_suffix('.') {
        Some(body) => format!("{body} [{marker}]."),
        None => format!("{sentence} [{marker}]"),
    }
}

/// The answer's sentences and the sentences its sources lend, by section.
#[derive(Default)]
struct Sections {
    cause: Vec<String>,
    solution: Vec<String>,
    changes: Vec<String>,
    alternatives: Vec<String>,
}

impl Sections {
    fn of(&mut self, part: Part) -> &mut Vec<String> {
        match part {
            Part::Cause => &mut self.cause,
            Part::Solution => &mut self.solution,
            Part::Changes => &mut self.changes,
            Part::Alternative => &mut self.alternatives,
        }
    }
}

/// `answer` arranged in sections: what the cause is, what to do, which files or commands change,
/// what else would work, and the sources its markers point at. A section the answer's own
/// sentences leave empty borrows up to two sentences from the sources it cites (found in
/// `hits`), each with that source's marker; a cause no cited source states is taken from the
/// best other source that states one, which is then cited. An answer already in sections (a
/// model wrote headings) or one without citations stays as it is.
pub fn in_sections(answer: Answer, hits: &[Hit]) -> Answer {
    if answer.citations.is_empty()
        || answer.text.contains("\n## ")
        || answer.text.starts_with("## ")
    {
        return answer;
    }
    let mut citations = answer.citations.clone();
    let hit_of = |marker: usize, citations: &[Citation]| {
        let id = &citations.iter().find(|c| c.marker == marker)?.hit_id;
        hits.iter().find(|h| &h.id == id)
    };
    let mut sections = Sections::default();
    for sentence in split_sentences(&answer.text) {
        let from_changelog = markers_in(&sentence)
            .into_iter()
            .filter_map(|m| hit_of(m, &citations))
            .any(is_changelog);
        sections
            .of(part_of(&sentence, from_changelog))
            .push(sentence);
    }
    // What the answer leaves unsaid, from the sources it cites.
    let said = one_line(&strip_markers(&answer.text));
    let own = [
        !sections.cause.is_empty(),
        !sections.solution.is_empty(),
        !sections.changes.is_empty(),
        !sections.alternatives.is_empty(),
    ];
    let lend = |sections: &mut Sections, hit: &Hit, marker: usize, only: Option<Part>| {
        let changelog = is_changelog(hit);
        for sentence in split_sentences(&hit.text) {
            let sentence = strip_markers(&sentence).trim().to_owned();
            if sentence.is_empty() || said.contains(&one_line(sentence.trim_end_matches('.'))) {
                continue;
            }
            let part = part_of(&sentence, changelog);
            let index = match part {
                Part::Cause => 0,
                Part::Solution => 1,
                Part::Changes => 2,
                Part::Alternative => 3,
            };
            if own[index] || only.is_some_and(|p| p != part) {
                continue;
            }
            let section = sections.of(part);
            let held = section.iter().any(|s| strip_markers(s).trim() == sentence);
            if section.len() >= MAX_ADDED_PER_SECTION || held {
                continue;
            }
            section.push(cite(&sentence, marker));
        }
    };
    for citation in &answer.citations {
        if let Some(hit) = hits.iter().find(|h| h.id == citation.hit_id) {
            lend(&mut sections, hit, citation.marker, None);
        }
    }
    // A cause stated outright ("… was removed in 2.1", "… is not installed") leads its section:
    // when the answer's own sentences state none, the cited sources lend one, else the best
    // other source that states one, which is then cited.
    if !sections.cause.iter().any(|s| states_cause(s)) {
        let mut lent = Vec::new();
        let next_marker = citations.len() + 1;
        let cited = citations.iter().filter_map(|c| {
            let hit = hits.iter().find(|h| h.id == c.hit_id)?;
            Some((hit, c.marker, false))
        });
        let uncited = hits
            .iter()
            .filter(|h| !citations.iter().any(|c| c.hit_id == h.id))
            .map(|h| (h, next_marker, true));
        let candidates: Vec<(&Hit, usize, bool)> = cited.chain(uncited).collect();
        for (hit, marker, new) in candidates {
            let held: Vec<String> = sections
                .cause
                .iter()
                .map(|s| strip_markers(s).trim().to_owned())
                .collect();
            let found: Vec<String> = cause_sentences(hit, &said)
                .into_iter()
                .filter(|s| !held.contains(s))
                .collect();
            if found.is_empty() {
                continue;
            }
            lent.extend(found.into_iter().map(|s| cite(&s, marker)));
            if new {
                citations.push(Citation {
                    marker,
                    hit_id: hit.id.clone(),
                    title: hit.title.to_string(),
                    url: hit.url.clone(),
                });
            }
            if lent.len() >= MAX_ADDED_PER_SECTION || new {
                break;
            }
        }
        lent.truncate(MAX_ADDED_PER_SECTION);
        lent.append(&mut sections.cause);
        sections.cause = lent;
    }
    // Another source's fix is an alternative: the best sources the answer leaves uncited lend
    // what they say to do (a change, a command), each cited anew.
    let mut offered = 0;
    let uncited: Vec<&Hit> = hits
        .iter()
        .filter(|h| !citations.iter().any(|c| c.hit_id == h.id))
        .collect();
    for hit in uncited {
        if sections.alternatives.len() >= MAX_ADDED_PER_SECTION || offered >= MAX_OTHER_SOURCES {
            break;
        }
        let fixes: Vec<String> = split_sentences(&hit.text)
            .into_iter()
            .map(|s| strip_markers(&s).trim().to_owned())
            .filter(|s| !s.is_empty() && !said.contains(&one_line(s.trim_end_matches('.'))))
            .filter(|s| {
                matches!(
                    part_of(s, is_changelog(hit)),
                    Part::Changes | Part::Alternative
                )
            })
            .take(1)
            .collect();
        if fixes.is_empty() {
            continue;
        }
        let marker = citations.len() + 1;
        citations.push(Citation {
            marker,
            hit_id: hit.id.clone(),
            title: hit.title.to_string(),
            url: hit.url.clone(),
        });
        sections
            .alternatives
            .extend(fixes.iter().map(|s| cite(s, marker)));
        offered += 1;
    }
    // Advice offered only as an alternative is the solution.
    if sections.solution.is_empty() && sections.changes.is_empty() {
        sections.solution = std::mem::take(&mut sections.alternatives);
    }
    let mut text = String::new();
    for (heading, sentences) in [
        ("Root Cause", &sections.cause),
        ("Solution", &sections.solution),
        ("Code/Config Changes", &sections.changes),
        ("Alternatives", &sections.alternatives),
    ] {
        if !sentences.is_empty() {
            text.push_str(&format!("## {heading}\n{}\n\n", sentences.join(" ")));
        }
    }
    text.push_str("## Sources\n");
    for citation in &citations {
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
        citations,
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
    fn a_changelog_line_is_a_cause_and_another_sources_fix_an_alternative() {
        let mut changes = Hit::new(
            "changes",
            "Changes — MarkupSafe Documentation",
            "Version 2.1.0. Remove soft_unicode, which was previously deprecated. Use soft_str instead. #261",
            1.0,
            "web",
        );
        changes.url = Some("https://markupsafe.palletsprojects.com/en/2.1.x/changes/".into());
        let so = Hit::new(
            "so",
            "cannot import name soft_unicode",
            "Upgrade Jinja2 to 3.0 or later, which no longer imports it.",
            1.0,
            "web",
        );
        let pin = Hit::new(
            "pin",
            "Pinning MarkupSafe",
            "If you cannot upgrade, pin the old release with `pip install markupsafe==2.0.1`.",
            1.0,
            "web",
        );
        let answer = check_citations(
            "Upgrade Jinja2 to 3.0 or later [1].",
            &[so.clone(), changes.clone(), pin.clone()],
        );
        let sectioned = in_sections(answer, &[so, changes, pin]);
        let text = &sectioned.text;
        let cause = text.split("## Solution").next().unwrap_or_default();
        assert!(
            cause.starts_with("## Root Cause\n") && cause.contains("Remove soft_unicode"),
            "the changelog line is the cause, cited anew: {text}"
        );
        assert!(
            text.contains("## Alternatives\n") && text.contains("markupsafe==2.0.1"),
            "{text}"
        );
        check_markers_resolve(&sectioned);
    }

    fn check_markers_resolve(answer: &Answer) {
        for marker in crate::citations::markers_in(&answer.text) {
            assert!(
                answer.citations.iter().any(|c| c.marker == marker),
                "[{marker}] has a citation: {}",
                answer.text
            );
        }
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
