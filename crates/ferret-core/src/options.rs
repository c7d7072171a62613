//! Options a web search provider takes, in one provider-neutral shape. A backend maps each to
//! its provider's parameter and ignores those its provider has no equivalent for; an option left
//! unset falls back to the backend's configured default.

use serde::{Deserialize, Serialize};

/// How deep a provider searches, where it offers a choice (Tavily: advanced costs two credits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchDepth {
    /// Snippets of the pages found.
    #[default]
    Basic,
    /// The passages most relevant to the query.
    Advanced,
}

/// What kind of pages to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Topic {
    /// Any page.
    #[default]
    General,
    /// News articles, with their publication dates.
    News,
    /// Financial sources.
    Finance,
}

/// Only pages from the last day, week, month or year.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// The last 24 hours.
    Day,
    /// The last 7 days.
    Week,
    /// The last 31 days.
    Month,
    /// The last 365 days.
    Year,
}

impl Freshness {
    /// The lowercase name providers take (`day`, `week`, `month`, `year`).
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Day => "day",
            Freshness::Week => "week",
            Freshness::Month => "month",
            Freshness::Year => "year",
        }
    }
}

/// The adult-content filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SafeSearch {
    /// No filtering.
    Off,
    /// The providers' usual default.
    #[default]
    Moderate,
    /// Drop anything explicit.
    Strict,
}

/// Provider options of one query; each one set overrides the backend's configured default.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SearchOptions {
    /// Basic or advanced search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<SearchDepth>,
    /// General, news or finance pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<Topic>,
    /// Only pages from the last day, week, month or year.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<Freshness>,
    /// Only pages from these domains ("docs.spring.io").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include_domains: Vec<String>,
    /// Never pages from these domains.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_domains: Vec<String>,
    /// The country results come from or are boosted for, as the provider names it ("US",
    /// "germany").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// The language of results, as a code ("en").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The adult-content filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_search: Option<SafeSearch>,
    /// The kind of model file wanted, for the model hubs (Civitai's `types`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_type: Option<crate::ModelType>,
}

impl SearchOptions {
    /// Longest domain, country or language accepted, in characters.
    pub const MAX_VALUE_CHARS: usize = 253;

    /// True when no option is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Why these options cannot be sent, if they cannot: an empty or oversized value, a domain
    /// with spaces or a scheme, or a domain both included and excluded.
    pub fn problem(&self) -> Option<String> {
        let domains = self.include_domains.iter().chain(&self.exclude_domains);
        for domain in domains {
            let domain = domain.trim();
            if domain.is_empty() || domain.chars().count() > Self::MAX_VALUE_CHARS {
                return Some(format!(
                    "a domain must have 1 to {} characters",
                    Self::MAX_VALUE_CHARS
                ));
            }
            if domain.contains("://") || domain.contains(char::is_whitespace) {
                return Some(format!(
                    "`{domain}` is not a domain: give the host only, as in `docs.spring.io`"
                ));
            }
        }
        if let Some(both) = self
            .include_domains
            .iter()
            .find(|d| self.exclude_domains.contains(d))
        {
            return Some(format!("`{both}` is both included and excluded"));
        }
        for (name, value) in [("country", &self.country), ("language", &self.language)] {
            if let Some(value) = value {
                if value.trim().is_empty() || value.chars().count() > Self::MAX_VALUE_CHARS {
                    return Some(format!(
                        "{name} must have 1 to {} characters",
                        Self::MAX_VALUE_CHARS
                    ));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_from_json_and_refuse_unknown_fields() {
        let options: SearchOptions =
            serde_json::from_str(r#"{"depth":"advanced","freshness":"week"}"#).unwrap();
        assert_eq!(options.depth, Some(SearchDepth::Advanced));
        assert_eq!(options.freshness, Some(Freshness::Week));
        assert!(serde_json::from_str::<SearchOptions>(r#"{"deep":true}"#).is_err());
        assert!(SearchOptions::default().is_empty());
    }

    #[test]
    fn a_url_or_a_contradiction_is_not_a_domain_list() {
        let url = SearchOptions {
            include_domains: vec!["https://docs.spring.io".into()],
            ..Default::default()
        };
        assert!(url.problem().unwrap().contains("host only"));
        let both = SearchOptions {
            include_domains: vec!["a.org".into()],
            exclude_domains: vec!["a.org".into()],
            ..Default::default()
        };
        assert!(both.problem().unwrap().contains("both"));
        let fine = SearchOptions {
            include_domains: vec!["docs.spring.io".into()],
            country: Some("US".into()),
            ..Default::default()
        };
        assert_eq!(fine.problem(), None);
    }
}
