//! Plain-text rendering of a response for people.

use std::fmt::Write as _;

use ferret::jobs::search::{
    HitId, Implementation, LlmCallOutcome, PaidUnit, ResponseType, TraceStep,
};
use ferret::jobs::session::Actions;
use ferret::{Hit, Response};

/// `heading`, then a line per hit: its title and, when it has one, its address.
fn list_hits<'a>(out: &mut String, heading: &str, hits: impl IntoIterator<Item = &'a Hit>) {
    let _ = writeln!(out, "\n{heading}");
    for h in hits {
        let url = h
            .url
            .as_deref()
            .map(|u| format!(" — {u}"))
            .unwrap_or_default();
        let _ = writeln!(out, "  - {}{url}", h.title);
    }
}

pub fn response(response: &Response, verbose: bool) -> String {
    let mut out = String::new();
    match response.response_type {
        ResponseType::Message => {
            let _ = writeln!(out, "{}", response.message.as_deref().unwrap_or_default());
            if !response.hits.is_empty() {
                list_hits(
                    &mut out,
                    "Found, though none of it answers:",
                    &response.hits,
                );
            }
        }
        ResponseType::Results => {
            if let Some(repeat) = &response.repeat_of {
                let _ = writeln!(
                    out,
                    "(asked before in this thread, turn {}: answered from the thread with no search; --search-again to search)\n",
                    repeat.turn
                );
            }
            if let Some(short) = &response.short_answer {
                let from: String = short
                    .citations
                    .iter()
                    .map(|c| format!(" [{}]", c.marker))
                    .collect();
                let _ = writeln!(out, "Answer: {}{from}\n", short.text);
            }
            let answer = response.answer.as_deref().unwrap_or_default();
            // A sectioned answer (a technical question's) ends with its own sources.
            let lists_sources = answer.contains("## Sources");
            let _ = writeln!(out, "{answer}");
            if !lists_sources {
                let _ = writeln!(out, "\nSources:");
            }
            for c in response.citations.iter().filter(|_| !lists_sources) {
                let _ = writeln!(
                    out,
                    "  [{}] {}{}",
                    c.marker,
                    c.title,
                    c.url
                        .as_deref()
                        .map(|u| format!(" — {u}"))
                        .unwrap_or_default()
                );
            }
            if let Some(actions) = &response.actions {
                render_actions(&mut out, actions, response);
            }
            let cited: Vec<_> = response.citations.iter().map(|c| &c.hit_id).collect();
            let others: Vec<_> = response
                .hits
                .iter()
                .filter(|h| !cited.contains(&&h.id))
                .collect();
            if !others.is_empty() {
                list_hits(&mut out, "Also found:", others);
            }
        }
    }
    if verbose {
        let _ = writeln!(out, "\nTrace:");
        for step in &response.trace.steps {
            let _ = writeln!(out, "  {}", trace_step(step));
        }
        let u = &response.usage;
        let _ = writeln!(
            out,
            "  stop: {:?}; {} backend calls, {} cache hits, {} coalesced; {} model requests, {}+{} tokens, ${:.6}; {} ms",
            response.stop_reason,
            u.backend_calls,
            u.cache_hits,
            u.coalesced,
            u.llm_calls,
            u.prompt_tokens,
            u.completion_tokens,
            u.cost_usd,
            u.elapsed_ms
        );
        for (backend, paid) in &u.paid {
            let unit = match paid.unit {
                PaidUnit::Credits => "credits",
                PaidUnit::Requests => "requests",
            };
            let _ = writeln!(
                out,
                "  paid: {backend} {} {unit} over {} calls",
                paid.amount, paid.calls
            );
        }
    }
    out
}

/// The actions, each with the marker of the source it came from when the answer cites it.
fn render_actions(out: &mut String, actions: &Actions, response: &Response) {
    let from = |source: &HitId| {
        response
            .citations
            .iter()
            .find(|c| &c.hit_id == source)
            .map(|c| format!(" [{}]", c.marker))
            .unwrap_or_default()
    };
    let _ = writeln!(out, "\nActions (confidence {:.2}):", actions.confidence);
    if let Some(primary) = &actions.primary {
        let _ = writeln!(out, "  first: {primary}");
    }
    for change in &actions.version_changes {
        let _ = writeln!(
            out,
            "  version: {} -> {}{}",
            change.component,
            change.version,
            from(&change.source)
        );
    }
    for change in &actions.file_changes {
        let _ = writeln!(
            out,
            "  file: {}: {}{}",
            change.file,
            change.change,
            from(&change.source)
        );
    }
    for command in &actions.commands {
        let _ = writeln!(out, "  run: {}{}", command.command, from(&command.source));
    }
}

fn by(implementation: &Implementation) -> String {
    match implementation {
        Implementation::Heuristic { why } => format!("heuristic: {why}"),
        Implementation::Llm {
            model,
            repaired: false,
        } => format!("llm: {model}"),
        Implementation::Llm {
            model,
            repaired: true,
        } => format!("llm: {model}, after one repair"),
    }
}

/// The response's trace, a line per step.
pub fn trace_lines(response: &Response) -> Vec<String> {
    response.trace.steps.iter().map(trace_step).collect()
}

fn trace_step(step: &TraceStep) -> String {
    match step {
        TraceStep::Intent { outcome, reason, implementation } => format!("intent: {outcome} ({reason}) [{}]", by(implementation)),
        TraceStep::Analysis { query_type, entities, complexity, implementation } => {
            format!("analysis: {query_type}, {complexity}, entities [{}] [{}]", entities.join(", "), by(implementation))
        }
        TraceStep::Strategy { chosen, reason } => format!("strategy: {chosen} ({reason})"),
        TraceStep::Tools { names, max_steps } => format!("tools: {}; at most {max_steps} steps", names.join(", ")),
        TraceStep::ToolStep { step, tool, reasoning, query, results, new_results, error, implementation } => {
            let outcome = error.as_ref().map_or_else(|| format!("{results} hits, {new_results} new"), |e| format!("failed: {e}"));
            format!("tool step {step}: {tool}[{query}] {outcome}; {reasoning} [{}]", by(implementation))
        }
        TraceStep::Plan { plan, problems, implementation } => {
            let fixed = if problems.is_empty() { String::new() } else { format!(" after: {}", problems.join("; ")) };
            format!("plan [{}]{fixed}\n    {}", by(implementation), plan.replace('\n', "\n    "))
        }
        TraceStep::PlanStep { variable, tool, argument, results, new_results, duration_ms, error } => {
            let outcome = error.as_ref().map_or_else(|| format!("{results} hits, {new_results} new"), |e| format!("failed: {e}"));
            format!("#{variable} = {tool}[{argument}]: {outcome} in {duration_ms} ms")
        }
        TraceStep::Verdict { subject, acceptable, feedback, implementation } => {
            let verdict = if *acceptable { "accepted".to_owned() } else { format!("sent back: {feedback}") };
            format!("{subject} evaluation: {verdict} [{}]", by(implementation))
        }
        TraceStep::Queries { attempt, queries, reason, implementation } => {
            format!("attempt {attempt} queries ({reason}): {queries:?} [{}]", by(implementation))
        }
        TraceStep::BackendCall { backend, query, duration_ms, cache_hit, coalesced, hits, error } => {
            let source = if *cache_hit { ", cache hit" } else if *coalesced { ", coalesced" } else { "" };
            let error = error.as_deref().map(|e| format!(", error: {e}")).unwrap_or_default();
            format!("call {backend} {query:?}: {hits} hits in {duration_ms} ms{source}{error}")
        }
        TraceStep::Grading { attempt, graded, kept, linked, good, quality, retry_suggestion, implementation } => {
            let suggestion = retry_suggestion.as_deref().map(|s| format!(", suggest {s}")).unwrap_or_default();
            let linked = if *linked > 0 { format!(" ({linked} through other results)") } else { String::new() };
            format!(
                "attempt {attempt} grading: {graded} graded, {kept} kept{linked}, {good} good, quality {quality}{suggestion} [{}]",
                by(implementation)
            )
        }
        TraceStep::Attempt { attempt, new_hits, decision } => format!("attempt {attempt}: {new_hits} new hits, {decision}"),
        TraceStep::Synthesis { sentences, citations, dropped_markers, implementation } => format!(
            "synthesis: {sentences} sentences, {citations} sources, {dropped_markers} markers dropped [{}]",
            by(implementation)
        ),
        TraceStep::Actions { version_changes, file_changes, commands, implementation } => format!(
            "actions: {version_changes} version changes, {file_changes} file changes, {commands} commands [{}]",
            by(implementation)
        ),
        TraceStep::LlmCall(call) => {
            let outcome = match &call.outcome {
                LlmCallOutcome::Parsed => "parsed".to_owned(),
                LlmCallOutcome::Repaired => "parsed after one repair".to_owned(),
                LlmCallOutcome::Refused { error } => format!("refused, heuristic used: {error}"),
                LlmCallOutcome::Failed { error } => format!("failed, heuristic used: {error}"),
            };
            let condensed = call.condensed.map_or_else(String::new, |c| {
                format!(", {} result(s) condensed (~{} tokens saved)", c.sources, c.tokens_saved)
            });
            format!(
                "model {} for {}: {} request(s), {}+{} tokens, ${:.6}, {} ms{condensed}, {outcome}",
                call.model, call.caller, call.requests, call.prompt_tokens, call.completion_tokens, call.cost_usd, call.duration_ms
            )
        }
        TraceStep::Thread { id, new: true, .. } => format!("thread {id}: new"),
        TraceStep::Thread { id, turns, .. } => format!("thread {id}: {turns} earlier turn(s)"),
        TraceStep::FollowUp { asked, resolved, implementation } => format!("follow-up {asked:?} read as {resolved:?} [{}]", by(implementation)),
        TraceStep::Ranking { status, candidates, implementation } => {
            let ranked: Vec<String> = candidates
                .iter()
                .map(|c| {
                    let rules: Vec<String> =
                        c.rules.iter().map(|r| format!("{} {:+}", r.rule, r.points)).collect();
                    format!("{} on {} {} ({})", c.file_name, c.source, c.confidence, rules.join(", "))
                })
                .collect();
            format!("ranking: {status:?} [{}]; {}", by(implementation), ranked.join("; "))
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferret::jobs::search::{StopReason, Trace};
    use ferret::Citation;

    fn answered(answer: &str) -> Response {
        let mut response = Response::message("", StopReason::Answered, Trace::default());
        response.response_type = ResponseType::Results;
        response.message = None;
        response.answer = Some(answer.to_owned());
        response.citations = vec![Citation {
            marker: 1,
            hit_id: HitId("a".into()),
            title: "Jinja2 changelog".into(),
            url: Some("https://example.com/changes".into()),
        }];
        response
    }

    #[test]
    fn sources_are_printed_once() {
        let sectioned = response(
            &answered("## Solution\nUpgrade Jinja2 [1].\n\n## Sources\n- [1] Jinja2 changelog (https://example.com/changes)"),
            false,
        );
        assert_eq!(
            sectioned.matches("Jinja2 changelog").count(),
            1,
            "{sectioned}"
        );
        let plain = response(&answered("Upgrade Jinja2 [1]."), false);
        assert_eq!(plain.matches("Jinja2 changelog").count(), 1, "{plain}");
        assert!(plain.contains("Sources:"));
    }
}
