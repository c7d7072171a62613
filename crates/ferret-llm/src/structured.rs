use ferret_core::{
    ChatMessage, ChatRole, CompletionRequest, LanguageModel, LlmError, TextSink, TokenUsage,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use ferret_core::text::{cut, CutMark};

/// Why no typed value could be had from the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The model call itself failed.
    #[error(transparent)]
    Model(#[from] LlmError),
    /// The output did not parse even after one repair request.
    #[error("the model's output did not match the schema after one repair: {last_error}")]
    Unparseable {
        /// The parse error of the last attempt.
        last_error: String,
        /// The last raw output, for the trace.
        last_output: String,
        /// Tokens spent on the attempts.
        usage: TokenUsage,
    },
    /// The reply was decoded under the schema's grammar but stopped before the value was
    /// complete (the token limit came first); a repair request cannot help.
    #[error(
        "the model's reply, decoded under the schema, was cut off before it was complete: {error}"
    )]
    Incomplete {
        /// The parse error.
        error: String,
        /// The raw output, for the trace.
        last_output: String,
        /// Tokens spent.
        usage: TokenUsage,
    },
}

/// How a structured value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempted {
    /// The first answer parsed (perhaps after tolerant clean-up).
    Parsed,
    /// The first answer did not parse; the repair request's answer did.
    Repaired,
}

/// A typed value from a model, with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput<T> {
    /// The value.
    pub value: T,
    /// Whether it needed the repair request.
    pub attempted: Attempted,
    /// Tokens over all attempts.
    pub usage: TokenUsage,
    /// The structured-output dialect the provider was asked in, when it has dialects.
    pub response_format: Option<String>,
}

/// Parse `raw` model output as `T`, tolerating what small models do to JSON: code fences, prose
/// around the value, trailing commas, single quotes, unquoted keys, output cut off mid-way.
///
/// Strict parsing is tried first so well-formed output is never altered by the repair step.
pub fn parse_tolerant<T: DeserializeOwned>(raw: &str) -> Result<T, String> {
    let trimmed = raw.trim();
    let strict_error = match serde_json::from_str::<T>(trimmed) {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    let candidate = extract_json(trimmed);
    if let Ok(value) = serde_json::from_str::<T>(candidate) {
        return Ok(value);
    }
    let repaired = llm_json::repair_json(
        candidate,
        &llm_json::RepairOptions {
            ensure_ascii: false,
            ..Default::default()
        },
    )
    .map_err(|e| format!("{strict_error}; repair failed: {e}"))?;
    serde_json::from_str::<T>(&repaired).map_err(|e| {
        format!(
            "{e} (after repairing the JSON to `{}`)",
            cut(&repaired, 200, CutMark::Ellipsis)
        )
    })
}

/// The part of `text` most likely to be the JSON value: inside a code fence if there is one,
/// from the first `{` or `[` on otherwise.
fn extract_json(text: &str) -> &str {
    let body = match text.find("```") {
        Some(open) => {
            let after = &text[open + 3..];
            // Skip a language tag such as `json`.
            let after = after.split_once('\n').map_or(after, |(tag, rest)| {
                if tag.trim().chars().all(char::is_alphanumeric) {
                    rest
                } else {
                    after
                }
            });
            after.find("```").map_or(after, |close| &after[..close])
        }
        None => text,
    };
    match body.find(['{', '[']) {
        Some(start) => body[start..].trim(),
        None => body.trim(),
    }
}

/// The prompt's description of the reply, derived from the JSON Schema: an example of the shape
/// and one line per field. Small models copy a raw JSON Schema instead of filling it in; a shape
/// they imitate. Servers that enforce schemas get the schema itself in the request.
pub fn reply_instruction(schema: &Value) -> String {
    let mut fields = Vec::new();
    let shape = outline(schema, schema, "", &mut fields, 0);
    let mut text = format!(
        "Reply with only a JSON object of this shape, and nothing before or after it:\n{shape}"
    );
    if !fields.is_empty() {
        text.push_str("\nFields:");
        for (name, description) in fields {
            text.push_str(&format!("\n- {name}: {description}"));
        }
    }
    text
}

/// A JSON example of `node`'s shape; field descriptions are collected into `fields`.
fn outline(
    root: &Value,
    node: &Value,
    path: &str,
    fields: &mut Vec<(String, String)>,
    depth: usize,
) -> String {
    let node = resolve(root, node);
    if depth > 6 {
        return "...".to_owned();
    }
    let kind = match node.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        Some(Value::String(kind)) => kind.as_str(),
        _ if node.get("properties").is_some() => "object",
        _ => node
            .get("anyOf")
            .and_then(|v| v.get(0))
            .map_or("string", |first| {
                if resolve(root, first).get("properties").is_some() {
                    "object"
                } else {
                    "string"
                }
            }),
    };
    match kind {
        "object" => {
            let node = match node.get("anyOf").and_then(|v| v.get(0)) {
                Some(first) if node.get("properties").is_none() => resolve(root, first),
                _ => node,
            };
            let Some(properties) = node.get("properties").and_then(Value::as_object) else {
                return "{}".to_owned();
            };
            // Required fields first, in declaration order; then the optional ones.
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut names: Vec<&str> = required
                .iter()
                .copied()
                .filter(|n| properties.contains_key(*n))
                .collect();
            names.extend(
                properties
                    .keys()
                    .map(String::as_str)
                    .filter(|n| !required.contains(n)),
            );
            let parts: Vec<String> = names
                .iter()
                .map(|name| {
                    let field = &properties[*name];
                    let full = if path.is_empty() {
                        (*name).to_owned()
                    } else {
                        format!("{path}.{name}")
                    };
                    if let Some(description) = resolve(root, field)
                        .get("description")
                        .or_else(|| field.get("description"))
                        .and_then(Value::as_str)
                    {
                        fields.push((full.clone(), description.to_owned()));
                    }
                    format!(
                        "\"{name}\": {}",
                        outline(root, field, &full, fields, depth + 1)
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        "array" => {
            let item = node.get("items").map_or_else(
                || "...".to_owned(),
                |items| outline(root, items, &format!("{path}[]"), fields, depth + 1),
            );
            format!("[{item}]")
        }
        "integer" => "0".to_owned(),
        "number" => "0.0".to_owned(),
        "boolean" => "false".to_owned(),
        _ => "\"...\"".to_owned(),
    }
}

/// Follow a local `$ref` (`#/$defs/Name`).
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
    {
        Some(pointer) => root.pointer(pointer).unwrap_or(node),
        None => node,
    }
}

/// Ask `model` for a `T`: the prompt gets the type's JSON Schema (and the request carries it for
/// servers that enforce it); the answer is parsed tolerantly; a failed parse gets exactly one
/// repair request that quotes the error; a second failure is a [`StructuredError::Unparseable`].
pub async fn generate<T: DeserializeOwned + JsonSchema>(
    model: &dyn LanguageModel,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
) -> Result<StructuredOutput<T>, StructuredError> {
    generate_streaming(model, messages, max_tokens, &|_| {}).await
}

/// [`generate`], handing `sink` the first answer's raw text as the model writes it (when it
/// streams); a repair's answer is not streamed, as its reader has seen the first one.
pub async fn generate_streaming<T: DeserializeOwned + JsonSchema>(
    model: &dyn LanguageModel,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
    sink: &TextSink<'_>,
) -> Result<StructuredOutput<T>, StructuredError> {
    generate_with_schema(model, messages, max_tokens, reply_schema::<T>(), sink).await
}

/// The JSON Schema of `T`, as a reply's schema is sent to a model.
pub fn reply_schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// Set `keywords` (`maxLength`, `minItems`, ...) on the schema at `pointer` (a JSON pointer into
/// `schema`, such as `/properties/query`); a pointer that names nothing leaves the schema as it
/// was, so a renamed field loses its narrowing, not its reply.
pub fn narrow<const N: usize>(schema: &mut Value, pointer: &str, keywords: [(&str, Value); N]) {
    if let Some(node) = schema.pointer_mut(pointer).and_then(Value::as_object_mut) {
        for (keyword, value) in keywords {
            node.insert(keyword.to_owned(), value);
        }
    }
}

/// Restrict the string property at `pointer` (a JSON pointer into `schema`, such as
/// `/properties/intent`) to `labels`; an optional property keeps `null`. A pointer that names
/// nothing leaves the schema as it was, so a renamed field loses its narrowing, not its reply.
pub fn restrict_to_labels<'a>(
    schema: &mut Value,
    pointer: &str,
    labels: impl IntoIterator<Item = &'a str>,
) {
    let Some(property) = schema.pointer_mut(pointer).and_then(Value::as_object_mut) else {
        return;
    };
    let nullable = match property.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "null"),
        _ => false,
    };
    let mut allowed: Vec<Value> = labels.into_iter().map(Value::from).collect();
    if nullable {
        allowed.push(Value::Null);
    }
    property.insert("enum".to_owned(), Value::Array(allowed));
}

/// [`generate_streaming`] with `schema` in place of `T`'s own: a narrower one (an enum of the
/// labels this request offers where `T` has a string) that every value of it still parses as `T`.
pub async fn generate_with_schema<T: DeserializeOwned>(
    model: &dyn LanguageModel,
    mut messages: Vec<ChatMessage>,
    max_tokens: u32,
    schema: Value,
    sink: &TextSink<'_>,
) -> Result<StructuredOutput<T>, StructuredError> {
    let instruction = reply_instruction(&schema);
    // Small models follow one system message at the top best; the schema joins it.
    match messages.iter_mut().find(|m| m.role == ChatRole::System) {
        Some(system) => system.content = format!("{}\n\n{instruction}", system.content),
        None => messages.insert(
            0,
            ChatMessage {
                role: ChatRole::System,
                content: instruction,
            },
        ),
    }
    let request = CompletionRequest {
        messages,
        max_tokens,
        temperature: 0.0,
        json_schema: Some(schema),
        stop: Vec::new(),
        deadline: crate::budget::current_budget().map(|budget| budget.call_deadline()),
    };
    let first = model.complete_streaming(&request, sink).await?;
    let mut usage = first.usage;
    let error = match parse_tolerant::<T>(&first.text) {
        Ok(value) => {
            return Ok(StructuredOutput {
                value,
                attempted: Attempted::Parsed,
                usage,
                response_format: first.response_format,
            })
        }
        Err(error) if first.constrained => {
            return Err(StructuredError::Incomplete {
                error,
                last_output: first.text,
                usage,
            })
        }
        Err(error) => error,
    };
    tracing::debug!(model = model.name(), %error, "structured output did not parse; asking once for a repair");
    let mut repair = request;
    repair.messages.push(ChatMessage {
        role: ChatRole::Assistant,
        content: first.text,
    });
    repair.messages.push(ChatMessage {
        role: ChatRole::User,
        content: format!(
            "That reply is not valid: {error}. Reply again with only the corrected JSON."
        ),
    });
    let second = model.complete(&repair).await?;
    usage.prompt_tokens += second.usage.prompt_tokens;
    usage.completion_tokens += second.usage.completion_tokens;
    match parse_tolerant::<T>(&second.text) {
        Ok(value) => Ok(StructuredOutput {
            value,
            attempted: Attempted::Repaired,
            usage,
            response_format: second.response_format,
        }),
        Err(last_error) => Err(StructuredError::Unparseable {
            last_error,
            last_output: second.text,
            usage,
        }),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq, JsonSchema)]
    struct Verdict {
        intent: String,
        confidence: f64,
    }

    fn verdict(raw: &str) -> Result<Verdict, String> {
        parse_tolerant(raw)
    }

    #[test]
    fn what_small_models_do_to_json_is_tolerated() {
        let expected = Verdict {
            intent: "search".into(),
            confidence: 0.9,
        };
        let cases = [
            r#"{"intent": "search", "confidence": 0.9}"#,
            "```json\n{\"intent\": \"search\", \"confidence\": 0.9}\n```",
            "Sure! Here is the JSON:\n{\"intent\": \"search\", \"confidence\": 0.9}\nHope it helps.",
            r#"{"intent": "search", "confidence": 0.9,}"#,
            r#"{'intent': 'search', 'confidence': 0.9}"#,
            r#"{intent: "search", confidence: 0.9}"#,
            r#"{"intent": "search", "confidence": 0.9"#,
        ];
        for raw in cases {
            assert_eq!(verdict(raw).as_ref(), Ok(&expected), "{raw}");
        }
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Graded {
        /// One grade per result.
        grades: Vec<Grade>,
        /// "high", "medium" or "low".
        quality: String,
        retry_query: Option<String>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Grade {
        /// The result's number.
        number: usize,
        /// 1 to 5.
        score: u8,
        passed: bool,
    }

    #[test]
    fn the_prompt_shows_the_shape_of_the_reply_not_the_raw_schema() {
        let schema = serde_json::to_value(schemars::schema_for!(Graded)).unwrap_or_default();
        insta::assert_snapshot!(reply_instruction(&schema), @r#"
        Reply with only a JSON object of this shape, and nothing before or after it:
        {"grades": [{"number": 0, "score": 0, "passed": false}], "quality": "...", "retry_query": "..."}
        Fields:
        - grades: One grade per result.
        - grades[].number: The result's number.
        - grades[].score: 1 to 5.
        - quality: "high", "medium" or "low".
        "#);
    }

    #[test]
    fn output_that_is_not_the_type_is_an_error_that_says_why() {
        let err = verdict(r#"{"intent": "search"}"#).unwrap_err();
        assert!(err.contains("confidence"), "{err}");
        assert!(verdict("I cannot help with that.").is_err());
        assert!(verdict("").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn arbitrary_output_never_panics(raw in ".{0,200}") {
            let _ = verdict(&raw);
        }

        #[test]
        fn damaged_json_never_panics(
            cut in 0usize..60,
            prefix in "[ a-zA-Z:`\n]{0,20}",
            suffix in "[ a-zA-Z`\n}\\],]{0,20}",
            quote in prop::bool::ANY,
        ) {
            let json = r#"{"intent": "search", "confidence": 0.9, "notes": ["a", {"b": null}]}"#;
            let mut body: String = json.chars().take(cut).collect();
            if quote {
                body = body.replace('"', "'");
            }
            let _ = verdict(&format!("{prefix}{body}{suffix}"));
        }
    }
}
