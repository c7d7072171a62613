//! The intent guardrail: decide whether a message is a search, too vague, out of the
//! corpus's domain, or small talk, and hold the reply for each non-search outcome.

use ferret_core::text::{content_terms, is_stop_word, words};
use ferret_core::StageOutput;
use serde::{Deserialize, Serialize};

use ferret_core::text::is_question_word;

/// What the user wants, as far as the guardrail can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// A question to search for: go on to analysis.
    Search,
    /// Too vague to search ("show me something"): ask for details.
    Unclear,
    /// Outside the corpus's domain ("tell me a joke"): decline politely.
    Unrelated,
    /// Greeting or small talk ("hello", "thanks"): answer warmly and offer help.
    Greeting,
}

impl Intent {
    /// The snake_case name, as in traces and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Search => "search",
            Intent::Unclear => "unclear",
            Intent::Unrelated => "unrelated",
            Intent::Greeting => "greeting",
        }
    }
}

/// The guardrail's decision and the rule (or model) reasoning behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentVerdict {
    /// The outcome.
    pub intent: Intent,
    /// Which rule fired, in words, for the trace.
    pub reason: String,
}

/// Classifies a question before any search runs.
#[async_trait::async_trait]
pub trait IntentClassifier: Send + Sync {
    /// Classify `question`. Never fails: a model-backed classifier falls back to rules.
    async fn classify(&self, question: &str) -> StageOutput<IntentVerdict>;
}

/// Replies for the outcomes that do not search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardrailMessages {
    /// Reply to an [`Intent::Unclear`] question: ask for details.
    pub unclear: String,
    /// Reply to an [`Intent::Unrelated`] question: say what Ferret can search.
    pub unrelated: String,
    /// Reply to an [`Intent::Greeting`]: greet and offer help.
    pub greeting: String,
}

impl GuardrailMessages {
    /// Default replies phrased from a domain description such as "heritage archive materials".
    pub fn for_domain(domain: &str) -> Self {
        Self {
            unclear: format!(
                "Could you please provide more details about what you're looking for in {domain}? \
                 For example, you could name a topic, a person, a place or a time period."
            ),
            unrelated: format!(
                "I can only help you search for {domain}. How can I assist you with {domain} today?"
            ),
            greeting: format!(
                "Hello! I'm here to help you search for {domain}. What would you like to explore?"
            ),
        }
    }

    /// The reply for `intent`; `None` for [`Intent::Search`], which answers with results.
    pub fn message_for(&self, intent: Intent) -> Option<&str> {
        match intent {
            Intent::Search => None,
            Intent::Unclear => Some(&self.unclear),
            Intent::Unrelated => Some(&self.unrelated),
            Intent::Greeting => Some(&self.greeting),
        }
    }
}

/// Out-of-domain requests for a search assistant over any corpus. Phrases rather than single
/// words, so "How did weather shape the Battle of Waterloo?" still searches.
pub const DEFAULT_UNRELATED_TOPICS: &[&str] = &[
    "weather forecast",
    "what's the weather",
    "whats the weather",
    "how's the weather",
    "weather today",
    "weather tomorrow",
    "tell me a joke",
    "tell me another joke",
    "say something funny",
    "write a poem",
    "write me a poem",
    "write a song",
    "write me a song",
    "write an essay",
    "write my essay",
    "what time is it",
    "what's the time",
    "translate this",
    "translate the following",
    "translate for me",
    "please translate",
    "set a timer",
    "set an alarm",
    "set a reminder",
    "remind me to",
    "play some music",
    "play a song",
    "order a pizza",
    "order food",
    "book a flight",
    "book a table",
    "call my",
    "send an email",
    "send a text",
];

/// The guardrail's configuration: the corpus's domain, what lies outside it, and the replies.
///
/// Deserialising fills missing fields from [`GuardrailConfig::for_domain`] with the given
/// `domain`, so `{"domain": "heritage archive materials"}` gets replies about heritage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RawGuardrailConfig")]
pub struct GuardrailConfig {
    /// What the corpus holds, as a phrase that reads after "search for": "general knowledge",
    /// "heritage archive materials".
    pub domain: String,
    /// Phrases that mark an out-of-domain request ("tell me a joke"). Matched as whole words,
    /// case-insensitively and after stemming.
    pub unrelated_topics: Vec<String>,
    /// When set, a question must mention one of these (word or phrase) to be in the domain.
    pub required_terms: Option<Vec<String>>,
    /// Replies for the non-search outcomes.
    pub messages: GuardrailMessages,
}

impl GuardrailConfig {
    /// Domain used when none is configured.
    pub const DEFAULT_DOMAIN: &'static str = "general knowledge";

    /// A configuration for `domain` with the default unrelated topics, no required terms, and
    /// replies phrased from the domain. A blank domain means [`Self::DEFAULT_DOMAIN`].
    pub fn for_domain(domain: impl Into<String>) -> Self {
        let domain = domain.into();
        let domain = if domain.trim().is_empty() {
            Self::DEFAULT_DOMAIN.to_owned()
        } else {
            domain.trim().to_owned()
        };
        Self {
            messages: GuardrailMessages::for_domain(&domain),
            domain,
            unrelated_topics: DEFAULT_UNRELATED_TOPICS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            required_terms: None,
        }
    }

    /// Require questions to mention one of `terms`.
    pub fn with_required_terms<I, S>(mut self, terms: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_terms = Some(terms.into_iter().map(Into::into).collect());
        self
    }

    /// Add phrases that mark a request as out of the domain.
    pub fn with_unrelated_topics<I, S>(mut self, topics: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.unrelated_topics
            .extend(topics.into_iter().map(Into::into));
        self
    }

    /// The reply for `intent`; `None` for [`Intent::Search`].
    pub fn message_for(&self, intent: Intent) -> Option<&str> {
        self.messages.message_for(intent)
    }
}

impl Default for GuardrailConfig {
    fn default() -> Self {
        Self::for_domain(Self::DEFAULT_DOMAIN)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuardrailConfig {
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    unrelated_topics: Option<Vec<String>>,
    #[serde(default)]
    required_terms: Option<Vec<String>>,
    #[serde(default)]
    messages: RawMessages,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMessages {
    #[serde(default)]
    unclear: Option<String>,
    #[serde(default)]
    unrelated: Option<String>,
    #[serde(default)]
    greeting: Option<String>,
}

impl From<RawGuardrailConfig> for GuardrailConfig {
    fn from(raw: RawGuardrailConfig) -> Self {
        let mut config = GuardrailConfig::for_domain(raw.domain.unwrap_or_default());
        if let Some(topics) = raw.unrelated_topics {
            config.unrelated_topics = topics;
        }
        config.required_terms = raw.required_terms;
        let m = raw.messages;
        if let Some(text) = m.unclear {
            config.messages.unclear = text;
        }
        if let Some(text) = m.unrelated {
            config.messages.unrelated = text;
        }
        if let Some(text) = m.greeting {
            config.messages.greeting = text;
        }
        config
    }
}

/// Greetings and small talk, as lowercase word sequences (apostrophes split words: "what's" is
/// "what s").
const GREETINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "heya",
    "hiya",
    "howdy",
    "greetings",
    "yo",
    "hola",
    "good morning",
    "good afternoon",
    "good evening",
    "good day",
    "good night",
    "morning",
    "evening",
    "thanks",
    "thank you",
    "thankyou",
    "thx",
    "ty",
    "cheers",
    "much appreciated",
    "appreciate it",
    "how are you",
    "how are you doing",
    "how r u",
    "how s it going",
    "how is it going",
    "how are things",
    "how do you do",
    "what s up",
    "whats up",
    "wassup",
    "sup",
    "nice to meet you",
    "pleased to meet you",
    "bye",
    "goodbye",
    "good bye",
    "see you",
    "see ya",
    "ok",
    "okay",
    "great",
    "cool",
    "awesome",
    "nice",
    "perfect",
    "i m fine",
    "i am fine",
    "i m good",
    "i am good",
    "that was helpful",
    "that s helpful",
    "that helps",
    "that helped",
    "that s great",
    "that s all",
    "got it",
    "well done",
    "great job",
    "no problem",
    "never mind",
    "nevermind",
];

/// Words that may accompany a greeting without making it a question ("hi there", "thanks a lot").
const GREETING_FILLERS: &[&str] = &[
    "there",
    "all",
    "everyone",
    "everybody",
    "again",
    "so",
    "much",
    "very",
    "a",
    "lot",
    "friend",
    "buddy",
    "mate",
    "folks",
    "guys",
    "y",
    "and",
    "you",
    "too",
    "oh",
    "well",
    "dear",
    "team",
    "bot",
    "assistant",
    "today",
    "fine",
    "good",
    "sir",
    "madam",
    "ferret",
];

/// Words that name no topic: a message made only of these and stop words is too vague to search.
const VAGUE_WORDS: &[&str] = &[
    "something",
    "anything",
    "everything",
    "stuff",
    "things",
    "thing",
    "whatever",
    "got",
    "see",
    "want",
    "wanna",
    "like",
    "looking",
    "look",
    "search",
    "searching",
    "get",
    "need",
    "interesting",
    "random",
    "cool",
    "nice",
    "good",
    "new",
    "let",
    "lets",
    "available",
    "offer",
    "items",
    "item",
    "results",
    "result",
    "info",
    "information",
    "help",
    "us",
    "browse",
    "explore",
    "recommend",
    "suggest",
    "suggestions",
    "recommendations",
    "else",
    "ideas",
    "idea",
    "content",
    "may",
    "might",
    "shall",
    "ok",
    "okay",
    "yes",
    "hmm",
    "stuffs",
    "somethin",
    "sth",
    "whats",
    "hows",
];

/// The deterministic guardrail: word lists and the configured domain, no model.
#[derive(Debug, Clone, Default)]
pub struct HeuristicIntentClassifier {
    config: GuardrailConfig,
}

impl HeuristicIntentClassifier {
    /// A classifier for `config`'s domain.
    pub fn new(config: GuardrailConfig) -> Self {
        Self { config }
    }

    /// The configuration in force.
    pub fn config(&self) -> &GuardrailConfig {
        &self.config
    }

    /// Classify synchronously; [`IntentClassifier::classify`] wraps this.
    ///
    /// Rules, first match wins: the whole message is small talk -> greeting; it matches an
    /// unrelated topic -> unrelated; no content term, or only vague words -> unclear; required
    /// terms configured and none present -> unrelated; otherwise search.
    pub fn verdict(&self, question: &str) -> IntentVerdict {
        let lower: Vec<String> = words(question).collect();
        if lower.is_empty() {
            return verdict(Intent::Unclear, "unclear: the message has no words");
        }
        let rest_start = skip_greeting_prefix(&lower);
        if rest_start == lower.len() && starts_with_greeting(&lower) {
            return verdict(
                Intent::Greeting,
                "greeting: the whole message is a greeting or small talk",
            );
        }

        let stemmed = normalize(question);
        if let Some(topic) = self
            .config
            .unrelated_topics
            .iter()
            .find(|t| contains_phrase(&stemmed, &normalize(t)))
        {
            return verdict(
                Intent::Unrelated,
                format!(
                    "unrelated: matches the out-of-domain topic \"{}\"",
                    topic.trim()
                ),
            );
        }

        let rest = &lower[rest_start..];
        let content: Vec<&String> = rest
            .iter()
            .filter(|w| !is_stop_word(w) && !is_question_word(w))
            .collect();
        if content.is_empty() {
            return verdict(
                Intent::Unclear,
                "unclear: no content terms once stop words are removed",
            );
        }
        if content.iter().all(|w| VAGUE_WORDS.contains(&w.as_str())) {
            return verdict(
                Intent::Unclear,
                "unclear: a vague request that names no topic",
            );
        }

        if let Some(required) = &self.config.required_terms {
            let required: Vec<Vec<String>> = required
                .iter()
                .map(|t| normalize(t))
                .filter(|t| !t.is_empty())
                .collect();
            if !required.is_empty() && !required.iter().any(|t| contains_phrase(&stemmed, t)) {
                return verdict(
                    Intent::Unrelated,
                    format!(
                        "unrelated: mentions none of the terms that mark {}",
                        self.config.domain
                    ),
                );
            }
        }

        let terms = content_terms(question).len();
        verdict(
            Intent::Search,
            format!(
                "search: {terms} content term(s), within {}",
                self.config.domain
            ),
        )
    }
}

#[async_trait::async_trait]
impl IntentClassifier for HeuristicIntentClassifier {
    async fn classify(&self, question: &str) -> StageOutput<IntentVerdict> {
        StageOutput::heuristic(self.verdict(question))
    }
}

fn verdict(intent: Intent, reason: impl Into<String>) -> IntentVerdict {
    IntentVerdict {
        intent,
        reason: reason.into(),
    }
}

fn greeting_phrases() -> impl Iterator<Item = Vec<&'static str>> {
    GREETINGS.iter().map(|g| g.split(' ').collect())
}

/// Length in words of the longest greeting phrase at the start of `words`, or 0.
fn greeting_at(words: &[String]) -> usize {
    greeting_phrases()
        .filter(|p| p.len() <= words.len() && p.iter().zip(words).all(|(a, b)| *a == b))
        .map(|p| p.len())
        .max()
        .unwrap_or(0)
}

fn starts_with_greeting(words: &[String]) -> bool {
    greeting_at(words) > 0
}

/// Index of the first word after any leading greetings and their fillers ("hi there, ...").
fn skip_greeting_prefix(words: &[String]) -> usize {
    let mut pos = 0;
    let mut seen_greeting = false;
    while pos < words.len() {
        let n = greeting_at(&words[pos..]);
        if n > 0 {
            pos += n;
            seen_greeting = true;
        } else if seen_greeting && GREETING_FILLERS.contains(&words[pos].as_str()) {
            pos += 1;
        } else {
            break;
        }
    }
    pos
}

/// Lowercase words with content words stemmed, for phrase matching that tolerates plurals.
fn normalize(text: &str) -> Vec<String> {
    words(text)
        .map(|w| {
            if is_stop_word(&w) {
                w
            } else {
                content_terms(&w).into_iter().next().unwrap_or(w)
            }
        })
        .collect()
}

/// Does `haystack` contain `needle` as a contiguous word sequence? An empty needle never matches,
/// so a blank configured topic cannot swallow every question.
fn contains_phrase(haystack: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERITAGE: &str = "heritage archive materials";

    fn heritage() -> HeuristicIntentClassifier {
        HeuristicIntentClassifier::new(GuardrailConfig::for_domain(HERITAGE).with_required_terms([
            "heritage",
            "traditional",
            "tradition",
            "culture",
            "cultural",
            "batik",
            "craft",
            "wayang",
            "kulit",
            "architecture",
            "history",
            "historical",
            "archive",
            "museum",
            "artifact",
            "photograph",
            "photo",
            "manuscript",
            "textile",
            "performance",
        ]))
    }

    fn general() -> HeuristicIntentClassifier {
        HeuristicIntentClassifier::default()
    }

    #[track_caller]
    fn check(classifier: &HeuristicIntentClassifier, cases: &[(&str, Intent)]) {
        for (question, want) in cases {
            let got = classifier.verdict(question);
            assert_eq!(got.intent, *want, "{question:?}: {}", got.reason);
            assert!(
                got.reason.starts_with(want.as_str()),
                "{question:?}: reason {:?}",
                got.reason
            );
        }
    }

    #[test]
    fn examples_with_the_heritage_domain() {
        check(
            &heritage(),
            &[
                ("batik", Intent::Search),
                ("traditional crafts", Intent::Search),
                ("show me wayang kulit videos", Intent::Search),
                (
                    "I want to see traditional batik from Kelantan",
                    Intent::Search,
                ),
                ("old photos of Georgetown architecture", Intent::Search),
                ("show me something", Intent::Unclear),
                ("what do you have?", Intent::Unclear),
                ("stuff", Intent::Unclear),
                ("what's the weather?", Intent::Unrelated),
                ("how to cook rice?", Intent::Unrelated),
                ("tell me a joke", Intent::Unrelated),
                ("hello", Intent::Greeting),
                ("hi there", Intent::Greeting),
                ("how are you?", Intent::Greeting),
            ],
        );
    }

    #[test]
    fn examples_with_the_general_knowledge_default() {
        check(
            &general(),
            &[
                ("Who discovered penicillin?", Intent::Search),
                ("how to cook rice?", Intent::Search),
                (
                    "How did weather shape the Battle of Waterloo?",
                    Intent::Search,
                ),
                ("show me something", Intent::Unclear),
                ("what do you have?", Intent::Unclear),
                ("stuff", Intent::Unclear),
                ("anything", Intent::Unclear),
                ("What's the weather?", Intent::Unrelated),
                ("tell me a joke", Intent::Unrelated),
                ("Write me a poem about the sea", Intent::Unrelated),
                ("what time is it", Intent::Unrelated),
                ("Please set a timer for 5 minutes", Intent::Unrelated),
                ("hello", Intent::Greeting),
                ("hi there", Intent::Greeting),
                ("how are you?", Intent::Greeting),
            ],
        );
    }

    #[test]
    fn greeting_only_when_the_whole_message_is_small_talk() {
        check(
            &general(),
            &[
                ("hi", Intent::Greeting),
                ("Hello there!", Intent::Greeting),
                ("good morning!", Intent::Greeting),
                ("thanks", Intent::Greeting),
                ("Thank you so much!", Intent::Greeting),
                ("thank you, that was helpful", Intent::Greeting),
                ("hey, how's it going?", Intent::Greeting),
                ("hi, what is photosynthesis?", Intent::Search),
                ("hello, who wrote Hamlet", Intent::Search),
                ("thanks! now find papers on CRISPR", Intent::Search),
                ("hi, what do you have?", Intent::Unclear),
            ],
        );
    }

    #[test]
    fn unclear_covers_empty_and_vague_messages() {
        check(
            &general(),
            &[
                ("", Intent::Unclear),
                ("   ?!  ", Intent::Unclear),
                ("what is it?", Intent::Unclear),
                ("show me something interesting", Intent::Unclear),
                ("anything new?", Intent::Unclear),
                ("Tell me something about Marie Curie", Intent::Search),
                ("things fall apart novel", Intent::Search),
            ],
        );
    }

    #[test]
    fn reasons_say_which_rule_fired() {
        let c = general();
        assert!(c
            .verdict("tell me a joke")
            .reason
            .contains("\"tell me a joke\""));
        assert!(c.verdict("stuff").reason.contains("vague"));
        assert!(c.verdict("what is it").reason.contains("content terms"));
        assert!(heritage()
            .verdict("how to cook rice")
            .reason
            .contains(HERITAGE));
    }

    #[test]
    fn required_terms_match_plurals_and_phrases() {
        let c = HeuristicIntentClassifier::new(
            GuardrailConfig::for_domain("model files").with_required_terms([
                "model",
                "lora",
                "checkpoint file",
            ]),
        );
        assert_eq!(c.verdict("SDXL models for anime").intent, Intent::Search);
        assert_eq!(
            c.verdict("a checkpoint file for SD 1.5").intent,
            Intent::Search
        );
        assert_eq!(
            c.verdict("a checkpoint for SD 1.5").intent,
            Intent::Unrelated
        );
    }

    #[test]
    fn blank_topics_and_terms_do_not_match_everything() {
        let mut config = GuardrailConfig::default().with_unrelated_topics(["", "  "]);
        config.required_terms = Some(vec![" ".into()]);
        let c = HeuristicIntentClassifier::new(config);
        assert_eq!(
            c.verdict("Who discovered penicillin?").intent,
            Intent::Search
        );
    }

    #[test]
    fn messages_are_phrased_from_the_domain() {
        let config = GuardrailConfig::for_domain(HERITAGE);
        for intent in [Intent::Unclear, Intent::Unrelated, Intent::Greeting] {
            let message = config.message_for(intent).unwrap();
            assert!(message.contains(HERITAGE), "{intent:?}: {message}");
        }
        assert_eq!(config.message_for(Intent::Search), None);
        assert_eq!(
            GuardrailConfig::for_domain("  ").domain,
            GuardrailConfig::DEFAULT_DOMAIN
        );
    }

    #[test]
    fn config_deserialises_with_defaults_from_the_given_domain() {
        let config: GuardrailConfig =
            serde_json::from_str(r#"{"domain": "heritage archive materials"}"#).unwrap();
        assert_eq!(config, GuardrailConfig::for_domain(HERITAGE));

        let config: GuardrailConfig = serde_json::from_str(
            r#"{"unrelated_topics": ["recipe"], "required_terms": ["batik"], "messages": {"greeting": "Selamat datang!"}}"#,
        )
        .unwrap();
        assert_eq!(config.domain, GuardrailConfig::DEFAULT_DOMAIN);
        assert_eq!(config.unrelated_topics, ["recipe"]);
        assert_eq!(
            config.message_for(Intent::Greeting),
            Some("Selamat datang!")
        );
        assert_eq!(
            config.messages.unclear,
            GuardrailMessages::for_domain(GuardrailConfig::DEFAULT_DOMAIN).unclear
        );

        let typo = serde_json::from_str::<GuardrailConfig>(r#"{"domian": "x"}"#);
        assert!(
            typo.is_err(),
            "a misspelt field is a config error, not silently ignored"
        );
    }

    #[test]
    fn intent_serialises_as_snake_case() {
        for intent in [
            Intent::Search,
            Intent::Unclear,
            Intent::Unrelated,
            Intent::Greeting,
        ] {
            assert_eq!(
                serde_json::to_string(&intent).unwrap(),
                format!("\"{}\"", intent.as_str())
            );
        }
    }

    #[tokio::test]
    async fn the_trait_reports_the_heuristic() {
        let c: &dyn IntentClassifier = &general();
        let out = c.classify("hello").await;
        assert_eq!(out.value.intent, Intent::Greeting);
        assert_eq!(
            out.implementation,
            ferret_core::Implementation::heuristic_default()
        );
    }

    proptest::proptest! {
        #[test]
        fn the_classifier_never_panics(q in "\\PC{0,200}") {
            let v = heritage().verdict(&q);
            proptest::prop_assert!(!v.reason.is_empty());
            let _ = general().verdict(&q);
        }
    }
}
