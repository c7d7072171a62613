//! The asker's situation (`java_version` = `17`) as the stages read it: the versions it states,
//! named as a search engine reads them, and what they change in the analysis.

use std::collections::BTreeMap;

use crate::analyzer::{Analysis, Complexity, EntityKind};

/// The versions `context` states, as a name and a number: `java_version` = `17` is "Java 17",
/// `spring_boot_version` = `1.5.22` is "Spring Boot 1.5.22", `jdk.version` = `21` is "JDK 21".
/// A value that does not start with a digit (`unknown`) states no version.
pub fn context_versions(context: &BTreeMap<String, String>) -> Vec<String> {
    context
        .iter()
        .filter_map(|(key, value)| {
            let value = value.trim();
            let product = key
                .to_lowercase()
                .strip_suffix("version")?
                .trim_end_matches(['_', '-', '.'])
                .to_owned();
            if product.is_empty() || !value.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let name: Vec<String> = product
                .split(['_', '-', '.'])
                .filter(|w| !w.is_empty())
                .map(|w| match w.len() {
                    ..=3 => w.to_uppercase(),
                    _ => {
                        let mut chars = w.chars();
                        chars
                            .next()
                            .map(|c| c.to_uppercase().chain(chars).collect())
                            .unwrap_or_default()
                    }
                })
                .collect();
            Some(format!("{} {value}", name.join(" ")))
        })
        .collect()
}

/// The context's versions whose number `text` does not already give ("JDK 17" gives Java's 17):
/// the ones worth adding to a query.
pub(crate) fn missing_versions(text: &str, analysis: &Analysis) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .collect();
    context_versions(&analysis.context)
        .into_iter()
        .filter(|v| {
            let number = v.rsplit(' ').next().unwrap_or_default();
            !words.contains(&number)
        })
        .collect()
}

impl Analysis {
    /// The analysis with the asker's `context`: an error question the context gives versions
    /// for is complex (which versions work together is a question of its own).
    pub fn with_context(mut self, context: BTreeMap<String, String>) -> Self {
        let has_error = self.entities_of(EntityKind::ErrorClass).next().is_some();
        if has_error && !context_versions(&context).is_empty() {
            self.complexity = Complexity::Complex;
        }
        self.context = context;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::HeuristicAnalyzer;

    #[test]
    fn version_keys_read_as_names_and_numbers() {
        let context = BTreeMap::from([
            ("java_version".to_owned(), "17".to_owned()),
            ("spring_boot_version".to_owned(), "1.5.22".to_owned()),
            ("jdk.version".to_owned(), "21".to_owned()),
            ("gradle_version".to_owned(), "unknown".to_owned()),
            ("project_path".to_owned(), "/src/app".to_owned()),
        ]);
        assert_eq!(
            context_versions(&context),
            ["Java 17", "JDK 21", "Spring Boot 1.5.22"]
        );
    }

    #[test]
    fn a_version_the_text_gives_is_not_added_again() {
        let context = BTreeMap::from([
            ("java_version".to_owned(), "17".to_owned()),
            ("spring_boot_version".to_owned(), "1.1.9".to_owned()),
        ]);
        let analysis = HeuristicAnalyzer.analysis("q").with_context(context);
        assert_eq!(
            missing_versions("Spring Boot fails on JDK 17.", &analysis),
            ["Spring Boot 1.1.9"]
        );
    }

    #[test]
    fn an_error_with_versions_in_the_context_is_complex() {
        let q = "NoClassDefFoundError: net/sf/cglib/proxy/Enhancer";
        let analysis = HeuristicAnalyzer.analysis(q);
        assert_eq!(analysis.complexity, Complexity::Simple);
        let context = BTreeMap::from([("java_version".to_owned(), "17".to_owned())]);
        let analysis = analysis.with_context(context);
        assert_eq!(analysis.complexity, Complexity::Complex);
        assert_eq!(analysis.context["java_version"], "17");
    }
}
