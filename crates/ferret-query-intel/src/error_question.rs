//! A question about an error: the error it is rooted in, the component that raised it, its
//! signature (so a thread knows the same failure asked again), and the searches an error in a
//! version context needs (the error, the versions' compatibility, the product's fix).

use crate::analyzer::{Analysis, EntityKind};
use crate::context::missing_versions;
use crate::util::join_words;

/// [error + component, versions + compatibility, product + error + fix].
pub(crate) fn error_version_queries(question: &str, analysis: &Analysis) -> Option<Vec<String>> {
    let error = root_error(question, analysis)?.to_owned();
    // The asker's versions count beside the question's own, unless the question gives them.
    let from_context = missing_versions(question, analysis);
    let versions: Vec<&str> = analysis
        .entities_of(EntityKind::Version)
        .map(|e| e.text.as_str())
        .chain(from_context.iter().map(String::as_str))
        .collect();
    let first_version = *versions.first()?;
    let in_a_version = |name: &str| versions.iter().any(|v| v.contains(name));
    let component = error_component(question, &error).or_else(|| {
        analysis
            .entities_of(EntityKind::Name)
            .map(|e| e.text.as_str())
            .find(|n| !in_a_version(n) && !n.contains(error.as_str()))
            .map(str::to_owned)
    });
    let product = product_of(first_version).or_else(|| {
        analysis
            .entities_of(EntityKind::Name)
            .map(|e| e.text.clone())
            .find(|n| !n.contains(error.as_str()))
    });
    let component = component.unwrap_or_default();
    let product = product.unwrap_or_default();
    Some(vec![
        join_words([first_version.to_owned(), error.clone(), component.clone()]),
        join_words(
            versions
                .iter()
                .map(|v| (*v).to_owned())
                .chain(["compatibility".to_owned()]),
        ),
        join_words([product, component, error, "fix".to_owned()]),
    ])
}

/// The error a question is about: in a chain of causes, the innermost one (named after the last
/// "Caused by"), which is where the failure started; else the first error named.
pub(crate) fn root_error<'a>(question: &str, analysis: &'a Analysis) -> Option<&'a str> {
    let mut errors = analysis
        .entities_of(EntityKind::ErrorClass)
        .map(|e| e.text.as_str());
    let first = errors.next()?;
    let innermost = question.rfind("Caused by").and_then(|at| {
        let cause = &question[at..];
        analysis
            .entities_of(EntityKind::ErrorClass)
            .map(|e| e.text.as_str())
            .filter_map(|e| cause.find(e).map(|pos| (pos, e)))
            .min_by_key(|(pos, _)| *pos)
            .map(|(_, e)| e)
    });
    Some(innermost.unwrap_or(first))
}

/// The rules' hypothesis for an error question: the innermost error and what it is about, against
/// the versions in play ("NoClassDefFoundError from cglib proxy Enhancer, likely incompatible
/// with JDK 17 and Spring Boot 1.1.9"); `None` without an error class.
pub fn root_cause(question: &str, analysis: &Analysis) -> Option<String> {
    let error = root_error(question, analysis)?;
    let mut hypothesis = match error_component(question, error) {
        Some(component) => format!("{error} from {component}"),
        None => error.to_owned(),
    };
    let versions: Vec<String> = analysis
        .entities_of(EntityKind::Version)
        .map(|e| e.text.clone())
        .chain(missing_versions(question, analysis))
        .collect();
    if !versions.is_empty() {
        hypothesis.push_str(&format!(
            ", likely incompatible with {}",
            versions.join(" and ")
        ));
    }
    Some(hypothesis)
}

/// An error question's signature, its error class and what the error is about:
/// "NoClassDefFoundError: net/sf/cglib/proxy/Enhancer" -> `NoClassDefFoundError:cglib.proxy.Enhancer`.
/// The same failure reads the same whatever else the question says. Without both parts, the
/// error line of any other language or package manager gives it
/// ([`language_error_signature`](crate::language_error_signature)); `None` without one.
pub fn error_signature(question: &str, analysis: &Analysis) -> Option<String> {
    let jvm = root_error(question, analysis).and_then(|error| {
        let component = named_path(question, error)?;
        Some(format!("{error}:{}", component.replace(' ', ".")))
    });
    // Any other language's error, by its own error line.
    jvm.or_else(|| crate::signature::language_error_signature(question))
}

/// What the error is about: the class or path the message names after it
/// ("NoClassDefFoundError: net/sf/cglib/proxy/Enhancer" -> "cglib proxy Enhancer"), else the
/// symbol and package the error's message names ("cannot import name 'soft_unicode' from
/// 'markupsafe'" -> "soft_unicode markupsafe").
pub(crate) fn error_component(question: &str, error: &str) -> Option<String> {
    named_path(question, error).or_else(|| {
        let reading = crate::signature::read_error(question)?;
        let words: Vec<String> = [reading.symbol, reading.package]
            .into_iter()
            .flatten()
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    })
}

/// The class or path named right after `error` in `question`, its last three segments.
fn named_path(question: &str, error: &str) -> Option<String> {
    let at = question.find(error)? + error.len();
    let rest = question[at..].strip_prefix(':')?;
    let token = rest.split_whitespace().next()?;
    let token = token.trim_matches(|c: char| !c.is_alphanumeric());
    if !token.contains(['/', '.']) {
        return None;
    }
    // A class the message only mentions ("com/acme/App has been compiled by a more recent
    // version …") is where the error happened, not what it is about.
    let next = rest.split_whitespace().nth(1).unwrap_or_default();
    if matches!(
        next,
        "has" | "have" | "is" | "was" | "cannot" | "could" | "does" | "did" | "must" | "will"
    ) {
        return None;
    }
    let segments: Vec<&str> = token.split(['/', '.']).filter(|s| !s.is_empty()).collect();
    let tail = &segments[segments.len().saturating_sub(3)..];
    (!tail.is_empty()).then(|| tail.join(" "))
}

/// The product words of a version ("Spring Boot 1.1.9" -> "Spring Boot"), if it has any.
fn product_of(version: &str) -> Option<String> {
    let product: Vec<&str> = version
        .split_whitespace()
        .take_while(|w| {
            !w.starts_with(|c: char| c.is_ascii_digit())
                && !matches!(w.to_lowercase().as_str(), "version" | "release" | "v")
        })
        .collect();
    (!product.is_empty() && product.len() < version.split_whitespace().count())
        .then(|| product.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeuristicAnalyzer;

    #[test]
    fn the_same_python_error_from_another_path_and_in_other_words_has_one_signature() {
        let asked = |text: &str| error_signature(text, &HeuristicAnalyzer.analysis(text));
        let first = asked("Flask fails to start: ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/home/ann/venv/lib/python3.11/site-packages/markupsafe/__init__.py)");
        let again = asked("how do I fix this?\nImportError: cannot import name 'soft_unicode' from 'markupsafe' (C:\\venv\\Lib\\site-packages\\markupsafe\\__init__.py)");
        assert!(first.is_some());
        assert_eq!(first, again);
        assert_eq!(asked("How do I rotate the API keys?"), None);
    }
}
