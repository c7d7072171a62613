//! The asker's situation (`java_version` = `17`) as the stages read it: the versions it states,
//! named as a search engine reads them, and what they change in the analysis.

use std::collections::BTreeMap;

use crate::analyzer::{Analysis, Complexity, EntityKind};

/// The versions `context` states, as a name and a number, read by meaning rather than by key:
/// `java_version` = `17` and `java` = `17` are "Java 17", `spring_boot_version` = `1.5.22` is
/// "Spring Boot 1.5.22", `jdk.version` = `21` is "JDK 21"; a value that names its product
/// itself gives that name (`os` = `ubuntu-22.04` is "Ubuntu 22.04", `framework` = `django 4.2`
/// is "Django 4.2", `node` = `v20.11` is "Node 20.11"). A value with no number (`unknown`,
/// `vim`, a path) states no version.
pub fn context_versions(context: &BTreeMap<String, String>) -> Vec<String> {
    context
        .iter()
        .filter_map(|(key, value)| {
            let value = value.trim();
            if value.contains(['/', '\\']) {
                return None;
            }
            // The value's own name and number (`django 4.2`), else the key's name.
            let (named, number) = split_version(value)?;
            let key = key.to_lowercase();
            let key = key
                .strip_suffix("version")
                .unwrap_or(&key)
                .trim_end_matches(['_', '-', '.']);
            let product = if named.is_empty() { key } else { named };
            if product.is_empty() {
                return None;
            }
            Some(format!("{} {number}", display_name(product)))
        })
        .collect()
}

/// `value` as the name it starts with (maybe empty) and the version after it: `django 4.2` is
/// (`django`, `4.2`), `ubuntu-22.04` (`ubuntu`, `22.04`), `v20.11` (``, `20.11`), `3.11` (``,
/// `3.11`); `None` when no word of it is a number.
fn split_version(value: &str) -> Option<(&str, &str)> {
    fn lower_v(w: &str) -> &str {
        w.strip_prefix(['v', 'V']).unwrap_or(w)
    }
    let start = value
        .char_indices()
        .find(|&(i, _)| {
            let word_start = i == 0 || !value[..i].ends_with(char::is_alphanumeric);
            word_start && lower_v(&value[i..]).starts_with(|d: char| d.is_ascii_digit())
        })
        .map(|(i, _)| i)?;
    let number = lower_v(&value[start..]);
    let number = number
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap_or(number);
    let named = value[..start]
        .trim_end_matches([' ', '-', '_', '@', '='])
        .trim();
    Some((named, number))
}

/// A product's name as a search engine reads it: `spring_boot` is "Spring Boot", `jdk` "JDK".
fn display_name(product: &str) -> String {
    product
        .split(['_', '-', '.', ' '])
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
        .collect::<Vec<String>>()
        .join(" ")
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
    fn context_is_read_by_meaning_not_by_key_suffix() {
        let read = |key: &str, value: &str| {
            context_versions(&BTreeMap::from([(key.to_owned(), value.to_owned())]))
        };
        assert_eq!(read("python", "3.11"), ["Python 3.11"]);
        assert_eq!(read("python_version", "3.11"), ["Python 3.11"]);
        assert_eq!(read("node", "20"), ["Node 20"]);
        assert_eq!(read("node", "v20.11.1"), ["Node 20.11.1"]);
        assert_eq!(read("os", "ubuntu-22.04"), ["Ubuntu 22.04"]);
        assert_eq!(read("framework", "django 4.2"), ["Django 4.2"]);
        assert_eq!(read("editor", "vim").len(), 0);
        assert_eq!(read("project_path", "/src/app2").len(), 0);
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
