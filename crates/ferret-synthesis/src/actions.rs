//! Action extraction: what an answer tells its reader to do (versions to move to, files to
//! change, commands to run), read from the sources the answer cites, each action naming the hit
//! it came from. An agent acts on these, so an action no source states is worse than one missed.

use std::collections::HashSet;
use std::sync::LazyLock;

use ferret_core::text::{cut, one_line, CutMark};
use ferret_core::{Actions, CommandAction, FileChange, Hit, HitId, StageOutput, VersionChange};
use regex::Regex;

use crate::citations::strip_markers;
use crate::untrusted::{addresses_the_agent, is_dangerous_command};
use ferret_core::sentences::split_sentences;

/// The stage: the actions `answer` to `question` states, read from `sources` (the hits the answer
/// cites, in citation order).
#[async_trait::async_trait]
pub trait ActionExtractor: Send + Sync {
    /// The actions found; empty when the sources state none.
    async fn extract(&self, question: &str, answer: &str, sources: &[Hit]) -> StageOutput<Actions>;
}

/// Reads actions by rule: commands from code blocks, shell lines, inline code and "run …"; a
/// version beside "upgrade", "requires", "compatible" and their kin; build and configuration files
/// by name (`pom.xml`, `build.gradle`, `application.yml`, …).
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicActionExtractor;

impl HeuristicActionExtractor {
    /// Longest file change kept, in characters.
    pub const MAX_CHANGE_CHARS: usize = 200;
    /// Most commands one source gives: a source that prints a whole script is read, not
    /// copied.
    pub const MAX_COMMANDS_PER_SOURCE: usize = 10;

    /// Extract synchronously; [`ActionExtractor::extract`] wraps this.
    pub fn actions(&self, sources: &[Hit]) -> Actions {
        self.actions_for("", sources)
    }

    /// [`actions`](Self::actions) for `question`: a source whose title names a product the
    /// question names (`Java 11`) only at other major versions ("Java 9 Migration Guide") gives
    /// no command (nor the pins its install commands carry), since its commands are for another
    /// setup; the versions its sentences and manifest lines state still count (an upgrade names
    /// another version by design), and so do the commands of a page that only mentions other
    /// versions in its text (a fix that began in Node 17 holds on 18).
    pub fn actions_for(&self, question: &str, sources: &[Hit]) -> Actions {
        let mut actions = Actions::default();
        let mut seen_commands = HashSet::new();
        let mut seen_components = HashSet::new();
        let mut seen_files = HashSet::new();
        let mut stated_by: Vec<(String, String)> = Vec::new();
        let mut version_changes = Vec::new();
        let mut manifests: Vec<(&str, String, HitId)> = Vec::new();
        // Every source stating a version counts toward agreement; the first names the change.
        let mut note_version = |component: String, version: String, hit: &Hit| {
            stated_by.push((component.to_lowercase(), version.clone()));
            // "node-fetch@2", then "node-fetch": "^2.7.0": the precise version of the same line.
            if let Some(earlier) = version_changes
                .iter_mut()
                .find(|v: &&mut VersionChange| v.component.eq_ignore_ascii_case(&component))
            {
                if version.starts_with(&format!("{}.", earlier.version)) {
                    earlier.version = version;
                    earlier.source = hit.id.clone();
                }
                return;
            }
            if seen_components.insert(component.to_lowercase()) {
                version_changes.push(VersionChange {
                    component,
                    version,
                    source: hit.id.clone(),
                });
            }
        };
        // A source speaking to the agent gives nothing, and a dangerous command is never handed
        // on, whoever states it.
        for hit in sources.iter().filter(|h| !addresses_the_agent(&h.text)) {
            let other_setup = for_another_setup(question, &hit.title);
            for command in commands(&hit.text)
                .into_iter()
                .filter(|c| !is_dangerous_command(c) && !other_setup)
                .take(Self::MAX_COMMANDS_PER_SOURCE)
            {
                // What an install command pins or raises is a version change of its own, as is
                // a tool's `--gradle-version 8.5`.
                for (component, version) in pinned_versions(&command)
                    .into_iter()
                    .chain(flagged_versions(&command))
                {
                    note_version(component, version, hit);
                }
                if let Some(manifest) = manifest_of(&command) {
                    manifests.push((manifest, command.clone(), hit.id.clone()));
                }
                if seen_commands.insert(command.clone()) {
                    actions.commands.push(CommandAction {
                        command,
                        source: hit.id.clone(),
                    });
                }
            }
            // A dependency as a manifest writes it ("node-fetch": "^2.7.0", dotenvy = "0.15",
            // <artifactId>lombok</artifactId><version>1.18.30</version>).
            for (component, version) in manifest_versions(&hit.text) {
                note_version(component, version, hit);
            }
            for sentence in split_sentences(&hit.text) {
                let sentence = one_line(&strip_markers(&sentence));
                if let Some((component, version)) = version_change(&sentence) {
                    note_version(component, version, hit);
                }
                for file in FILE.find_iter(&sentence) {
                    if seen_files.insert(file.as_str().to_owned()) {
                        actions.file_changes.push(FileChange {
                            file: file.as_str().to_owned(),
                            change: cut(&sentence, Self::MAX_CHANGE_CHARS, CutMark::Ellipsis),
                            source: hit.id.clone(),
                        });
                    }
                }
            }
        }
        // A dependency pinned or raised by an install command is kept in the manifest of its
        // package manager, unless a source already names a file of that ecosystem.
        for (manifest, command, source) in manifests {
            let named = actions
                .file_changes
                .iter()
                .any(|f| same_ecosystem(&f.file, manifest));
            if !named && !pinned_versions(&command).is_empty() {
                let pins: Vec<String> = pinned_versions(&command)
                    .into_iter()
                    .map(|(package, version)| format!("{package} {version}"))
                    .collect();
                actions.file_changes.push(FileChange {
                    file: manifest.to_owned(),
                    change: format!("record {} (from `{command}`)", pins.join(", ")),
                    source,
                });
            }
        }
        actions.version_changes = version_changes;
        actions.primary = primary(&actions);
        actions.confidence = confidence(&actions, &stated_by);
        actions
    }
}

#[async_trait::async_trait]
impl ActionExtractor for HeuristicActionExtractor {
    async fn extract(
        &self,
        question: &str,
        _answer: &str,
        sources: &[Hit],
    ) -> StageOutput<Actions> {
        StageOutput::heuristic(self.actions_for(question, sources))
    }
}

/// What a version is of, when prose says "<what> version N": "class file major version 61".
static WORD_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([a-z][\w.+#-]*)\s+version\s+v?(\d+(?:\.\d+)*)").expect("valid regex")
});

/// Products and their major versions `text` names ("Java 11" gives (`java`, 11), "class file
/// major version 61" (`major`, 61)).
fn majors(text: &str) -> Vec<(String, u64)> {
    let named = NAME_VERSION.captures_iter(text).filter_map(|c| {
        let name = c[1].rsplit(' ').next()?.to_lowercase();
        Some((name, c.get(2)?.as_str().to_owned()))
    });
    let worded = WORD_VERSION
        .captures_iter(text)
        .map(|c| (c[1].to_lowercase(), c[2].to_owned()));
    named
        .chain(worded)
        .filter_map(|(name, version)| {
            let major = version
                .split('.')
                .next()?
                .trim_end_matches('+')
                .parse()
                .ok()?;
            Some((name, major))
        })
        .collect()
}

/// Does `title` name a product `question` names only at other major versions?
fn for_another_setup(question: &str, title: &str) -> bool {
    let asked = majors(question);
    if asked.is_empty() {
        return false;
    }
    let stated = majors(title);
    asked.iter().any(|(name, major)| {
        let same_name: Vec<u64> = stated
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, m)| *m)
            .collect();
        !same_name.is_empty() && !same_name.contains(major)
    })
}

/// The first thing to do: move the first component, else run the first command, else change the
/// first file.
pub(crate) fn primary(actions: &Actions) -> Option<String> {
    if let Some(change) = actions.version_changes.first() {
        return Some(format!(
            "upgrade {} to {}",
            change.component, change.version
        ));
    }
    if let Some(command) = actions.commands.first() {
        return Some(format!("run `{}`", command.command));
    }
    actions
        .file_changes
        .first()
        .map(|change| format!("change {}", change.file))
}

/// More kinds of action stated, and a version two sources agree on, make the actions surer.
fn confidence(actions: &Actions, stated_by: &[(String, String)]) -> f64 {
    if actions.is_empty() {
        return 0.0;
    }
    let kinds = [
        !actions.version_changes.is_empty(),
        !actions.file_changes.is_empty(),
        !actions.commands.is_empty(),
    ]
    .into_iter()
    .filter(|&k| k)
    .count();
    let agreed = actions.version_changes.first().is_some_and(|first| {
        let key = (first.component.to_lowercase(), first.version.clone());
        stated_by.iter().filter(|s| **s == key).count() >= 2
    });
    let score = 0.4 + 0.15 * kinds as f64 + if agreed { 0.1 } else { 0.0 };
    score.min(0.95)
}

/// Tools whose command lines are worth running as written.
const TOOLS: &str = r"(?:mvn|\./mvnw|mvnw|gradle|\./gradlew|gradlew|npm|npx|yarn|pnpm|pip3?|pipx|python3?|cargo|rustup|rustc|go|apt-get|apt|dnf|yum|pacman|apk|zypper|brew|choco|winget|docker|kubectl|git|sdk|java|javac|make|cmake|gcc|g\+\+|clang\+\+|clang|cc|tsc|node|nvm|dotnet|Install-Package|composer|gem|bundle|poetry|uv|conda|curl|wget|export|echo|rm|mkdir|cp|mv|ln|tar|unzip|chmod|update-alternatives|systemctl|pyenv|jenv|corepack|volta|asdf)";

static CODE_BLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)```[\w+-]*\n?(.*?)```").expect("valid regex"));
static INLINE_CODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{3,300})`").expect("valid regex"));
static COMMAND_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^(?:\$\s+)?((?:sudo\s+)?{TOOLS}\s+\S.*)$")).expect("valid regex")
});
/// "Run mvn clean install -U to refresh": the command ends at a clause's end.
static RUN_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"\b(?i:run|execute|type|use)\s+((?:sudo\s+)?{TOOLS}\s+[^\s,;]*[^\s,;.](?:\s+[^\s,;]*[^\s,;.])*?)(?:[.;,](?:\s|$)|\s(?i:to|and|then|so|which|if|after|before|for|in|on|from|with)\s|$)"
    ))
    .expect("valid regex")
});
/// A package manager's install verb, in prose or code ("pip install -U", "npm i", "cargo add").
static INSTALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b((?:python3? -m )?pip3? install(?: -U| --upgrade)?|npm (?:i|install|add)(?: -[DSgE]| --save-dev)?|yarn add|pnpm add|cargo add|go get|poetry add|uv (?:add|pip install)|conda install|gem install|dotnet add package|Install-Package|composer require)\s+")
        .expect("valid regex")
});
/// A package with a version or range: `markupsafe==2.0.1`, `"Jinja2>=3.0"`, `react@18.2.0`,
/// `serde@1.0`.
static PACKAGE_SPEC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^["']?([A-Za-z@][\w.@/-]*?[\w])(==|>=|<=|~=|!=|>|<|@\^|@~|@)(\d[\w.*+-]*)["']?$"#)
        .expect("valid regex")
});
/// A component and its version: "Spring Boot 2.7.18", "Java 17", "JDK 21", "Hibernate 6.x".
static NAME_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b([A-Z][A-Za-z0-9+#-]*(?:[ -][A-Z][A-Za-z0-9+#-]*){0,2})\s+v?(\d+(?:\.\d+){0,2}(?:\.x|\+)?)")
        .expect("valid regex")
});
/// "upgrade Spring Boot to 2.7": the component, then its version after "to".
static MOVE_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:upgrade|update|bump|migrate|move|switch)\s+(?:(?i:the)\s+)?([A-Z][A-Za-z0-9+#-]*(?:[ -][A-Z][A-Za-z0-9+#-]*){0,2})\s+(?i:to)\s+(?:(?i:version)\s+)?v?(\d+(?:\.\d+){0,2}(?:\.x|\+)?)")
        .expect("valid regex")
});
/// Words that make a sentence's version an action.
static CHANGE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:upgrad\w*|updat\w*|requir\w*|compatib\w*|migrat\w*|bump\w*|switch\w*|move to)\b",
    )
    .expect("valid regex")
});
/// A sentence that says not to, or that something does not work.
static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:not|never|no longer|cannot)\b|n't\b").expect("valid regex")
});
/// Build and configuration files, by name.
static FILE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"\b(?:[\w.-]+/)*{BUILD_FILES}\b")).expect("valid regex"));

/// Build, manifest and configuration files by name, as a pattern the sections of an error's
/// answer share.
pub(crate) const BUILD_FILES: &str = r"(?:pom\.xml|build\.gradle(?:\.kts)?|settings\.gradle(?:\.kts)?|gradle\.properties|gradle-wrapper\.properties|application(?:-\w+)?\.(?:properties|ya?ml)|package\.json|package-lock\.json|pnpm-lock\.yaml|yarn\.lock|tsconfig\.json|\.npmrc|\.nvmrc|Cargo\.toml|Cargo\.lock|rust-toolchain(?:\.toml)?|pyproject\.toml|requirements(?:-\w+)?\.txt|setup\.py|setup\.cfg|Pipfile|environment\.ya?ml|go\.mod|go\.sum|(?:\*|[\w.-]+)\.csproj|Directory\.Packages\.props|global\.json|packages\.config|CMakeLists\.txt|Makefile|Gemfile|composer\.json|Dockerfile|docker-compose\.ya?ml)";

/// The manifest each package manager's install command records its dependencies in, and the
/// other files of the same ecosystem that would hold them instead.
const MANIFESTS: &[(&str, &str, &[&str])] = &[
    (
        "pip",
        "requirements.txt",
        &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "Pipfile",
            "requirements",
        ],
    ),
    ("poetry", "pyproject.toml", &["requirements"]),
    ("uv", "pyproject.toml", &["requirements"]),
    ("conda", "environment.yml", &["environment.yaml"]),
    ("npm", "package.json", &[]),
    ("yarn", "package.json", &[]),
    ("pnpm", "package.json", &[]),
    ("cargo", "Cargo.toml", &[]),
    ("go", "go.mod", &[]),
    ("composer", "composer.json", &[]),
    ("gem", "Gemfile", &[]),
];

/// The manifest `command` (an install command) records its packages in.
fn manifest_of(command: &str) -> Option<&'static str> {
    let verb = INSTALL.find(command)?;
    let words = verb.as_str().to_lowercase();
    let tool = words
        .split_whitespace()
        .find(|w| !matches!(*w, "python" | "python3" | "-m"))?;
    let tool = tool.trim_end_matches('3');
    // `npm install -g` installs a tool, not a dependency.
    if command
        .split_whitespace()
        .any(|w| w == "-g" || w == "--global")
    {
        return None;
    }
    MANIFESTS
        .iter()
        .find(|(manager, ..)| *manager == tool)
        .map(|(_, manifest, _)| *manifest)
}

/// Do `file` and `manifest` belong to one ecosystem (`pyproject.toml` and `requirements.txt`)?
fn same_ecosystem(file: &str, manifest: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file);
    MANIFESTS
        .iter()
        .filter(|(_, m, _)| *m == manifest)
        .any(|(_, m, others)| name == *m || others.iter().any(|o| name.contains(o)))
}

/// Words that open a sentence but name no component.
const NOT_COMPONENTS: &[&str] = &[
    "the",
    "this",
    "it",
    "a",
    "an",
    "version",
    "versions",
    "from",
    "since",
    "with",
    "upgrade",
    "upgrading",
    "update",
    "updating",
    "migrate",
    "use",
    "using",
    "run",
    "in",
    "on",
    "to",
    "see",
];

/// `--gradle-version 8.5`, `--sdk-version=8.0.100`: a flag naming what it sets the version of.
static NAMED_VERSION_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"--([a-z][a-z0-9]*)-version[= ](\d[\w.]*\w)").expect("valid regex")
});

/// The versions `command` sets with a named flag.
fn flagged_versions(command: &str) -> Vec<(String, String)> {
    NAMED_VERSION_FLAG
        .captures_iter(command)
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect()
}

/// Words of a clause, not of a command line: "Note: node versions below 18 are unsupported".
const CLAUSE_WORDS: &[&str] = &[
    "then",
    "are",
    "were",
    "be",
    "been",
    "not",
    "you",
    "your",
    "should",
    "must",
    "may",
    "does",
    "do",
    "did",
    "has",
    "have",
    "had",
    "below",
    "above",
    "unsupported",
    "supported",
];

/// Words after an install line that report what it did ("pip install -r requirements.txt fails
/// with …"): the command ends before them.
const REPORTING_WORDS: &[&str] = &[
    "fails", "failed", "works", "worked", "gives", "gave", "throws", "threw", "returns", "breaks",
    "errors", "succeeds", "hangs",
];

/// A line of source code that starts like a command (`export default defineConfig({`,
/// `go func() {`, PHP's `echo "<br>";`).
static SOURCE_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[{};]\s*$|=>|^export\s+(?:default|const|function|class|let|var|type|interface|async)\b|^go\s+func\b|\bfunction\s*\(")
        .expect("valid regex")
});

/// Longest command kept, in characters: a migration tool's invocation with its recipe runs long.
const MAX_COMMAND_CHARS: usize = 300;

/// Flags that give the version of the package an install command names.
const VERSION_FLAG: &[&str] = &["--version", "-version", "-v"];

/// Words that, right after a tool's name, show a sentence about the tool rather than its command.
const PROSE_WORDS: &[&str] = &[
    "to", "the", "a", "an", "it", "is", "was", "and", "or", "for", "with", "on", "in", "of", "as",
    "that", "this", "which", "will", "can",
];

fn commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut keep = |command: &str| {
        // A shell comment after the command ("# for python3.x") is not part of it.
        let command = command.split(" #").next().unwrap_or(command);
        let command = command.trim().trim_end_matches(['.', ',', ';']).trim();
        // "use git to track it" is prose about a tool, not a command line.
        let argument = command.split_whitespace().nth(1).map(str::to_lowercase);
        let prose = argument
            .as_ref()
            .is_some_and(|a| PROSE_WORDS.contains(&a.as_str()));
        // `echo` only matters when it writes a file (`echo KEY=value > .env`); "python 3.10"
        // names a version, not a command.
        let prints_only = command.starts_with("echo ") && !command.contains('>');
        let names_a_version = command.split_whitespace().count() == 2
            && argument
                .as_deref()
                .is_some_and(|a| a.starts_with(|c: char| c.is_ascii_digit()));
        let prints_only = prints_only || names_a_version || SOURCE_CODE.is_match(command);
        if argument.is_some()
            && !prose
            && !prints_only
            && command.chars().count() <= MAX_COMMAND_CHARS
        {
            found.push(one_line(command));
        }
    };
    for block in CODE_BLOCK.captures_iter(text) {
        for line in block[1].lines() {
            if let Some(command) = COMMAND_LINE.captures(line.trim()) {
                keep(&command[1]);
            }
        }
    }
    let outside_blocks = CODE_BLOCK.replace_all(text, " ");
    for code in INLINE_CODE.captures_iter(&outside_blocks) {
        if let Some(command) = COMMAND_LINE.captures(code[1].trim()) {
            keep(&command[1]);
        }
    }
    let prose = INLINE_CODE.replace_all(&outside_blocks, " ");
    // "Downgrade with pip install markupsafe==2.0.1 and restart": an install line in prose
    // runs from the verb to the last package or flag.
    for verb in INSTALL.find_iter(&prose) {
        let rest = &prose[verb.end()..];
        let mut taken: Vec<&str> = Vec::new();
        for token in rest.split_whitespace() {
            let bare = token.trim_end_matches(['.', ',', ';', ':', ')']);
            let lower = bare.to_lowercase();
            let aside =
                token.starts_with(['(', '#']) || matches!(token, "-" | "\u{2013}" | "\u{2014}");
            let reports = REPORTING_WORDS.contains(&lower.as_str());
            if bare.is_empty()
                || aside
                || reports
                || PROSE_WORDS.contains(&lower.as_str())
                || lower == "then"
            {
                break;
            }
            taken.push(bare);
            if bare.len() != token.len() {
                break;
            }
        }
        if !taken.is_empty() {
            keep(&format!("{} {}", verb.as_str().trim(), taken.join(" ")));
        }
    }
    for line in prose.lines() {
        if let Some(command) = COMMAND_LINE.captures(line.trim()) {
            if line.trim_start().starts_with('$') {
                keep(&command[1]);
                continue;
            }
        }
        for phrase in RUN_PHRASE.captures_iter(line) {
            keep(&phrase[1]);
        }
        // "The correct command is: gcc -pthread -o app app.c", "For apt: sudo apt-get install
        // python3-dev; for dnf: sudo dnf install python3-devel": commands after a colon, to the
        // clause's end.
        for (at, _) in line.match_indices(": ") {
            for piece in line[at + 2..].split(';') {
                let piece = piece.trim();
                let piece = piece
                    .split_once(". ")
                    .map_or(piece, |(first, _)| first)
                    .trim_end_matches('.');
                let piece = match COMMAND_LINE.captures(piece) {
                    Some(_) => piece,
                    None => piece.split_once(": ").map_or("", |(_, after)| after.trim()),
                };
                let piece = piece.split(" #").next().unwrap_or(piece).trim();
                // "dotnet build then fails with …" is a sentence about a command.
                let reads_as_prose = piece.split_whitespace().skip(1).any(|w| {
                    let w = w.to_lowercase();
                    PROSE_WORDS.contains(&w.as_str()) || CLAUSE_WORDS.contains(&w.as_str())
                });
                if let Some(command) = COMMAND_LINE.captures(piece).filter(|_| !reads_as_prose) {
                    keep(&command[1]);
                }
            }
        }
    }
    found
}

/// Dependencies as manifests write them: a `package.json` entry, a `Cargo.toml` or
/// `pyproject.toml` line, a Maven artifact with its version.
static MANIFEST_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        "(@?[A-Za-z][\w.-]*(?:/[\w.-]+)?)"\s*:\s*"[\^~>=\s]*(\d[\w.-]*)"
        | \b([a-z][\w-]*)\s+=\s+(?:\{\s*version\s*=\s*)?"[\^~>=\s]*(\d[\w.-]*)"
        | <artifactId>([\w.-]+)</artifactId>\s*<version>(\d[\w.-]*)</version>
        | \b[a-z][\w-]*\.[\w.-]+:([A-Za-z][\w.-]*):(\d+\.[\w.-]*\w)
        | \b([A-Za-z][\w.-]*[A-Za-z0-9])==(\d[\w.]*[\w])
    "#,
    )
    .expect("valid regex")
});

/// Keys of manifests that hold no dependency.
const NOT_DEPENDENCIES: &[&str] = &["version", "edition", "name", "description", "main"];

/// The dependencies and versions `text` writes as a manifest would, the last version of each
/// (a text going "from 4.0.3 to 5.0.1" names the version to move to last).
fn manifest_versions(text: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for (name, version) in all_manifest_versions(text) {
        match found.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = version,
            None => found.push((name, version)),
        }
    }
    found
}

fn all_manifest_versions(text: &str) -> Vec<(String, String)> {
    MANIFEST_ENTRY
        .captures_iter(text)
        .filter_map(|c| {
            let (name, version) = (1..=9)
                .step_by(2)
                .find_map(|i| Some((c.get(i)?, c.get(i + 1)?)))?;
            let name = name.as_str();
            (!NOT_DEPENDENCIES.contains(&name))
                .then(|| (name.to_owned(), version.as_str().to_owned()))
        })
        .collect()
}

/// The packages an install command names with a version or range, each with it: `pip install
/// markupsafe==2.0.1` gives (`markupsafe`, `2.0.1`), `pip install -U "Jinja2>=3.0"` gives
/// (`Jinja2`, `>=3.0`); a pin (`==`, `@`) is the version itself.
fn pinned_versions(command: &str) -> Vec<(String, String)> {
    let Some(verb) = INSTALL.find(command) else {
        return Vec::new();
    };
    let tokens: Vec<&str> = command[verb.end()..].split_whitespace().collect();
    // `dotnet add package Newtonsoft.Json --version 13.0.3`, `Install-Package X -Version 1.2`:
    // the package first, its version after the flag.
    let flagged = tokens
        .iter()
        .position(|t| VERSION_FLAG.contains(&t.to_lowercase().as_str()));
    if let (Some(at), Some(package)) = (flagged, tokens.first()) {
        let version = tokens
            .get(at + 1)
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()));
        if let Some(version) = version.filter(|_| !package.starts_with('-')) {
            return vec![((*package).to_owned(), (*version).to_owned())];
        }
    }
    tokens
        .into_iter()
        .filter_map(|token| {
            let spec = PACKAGE_SPEC.captures(token)?;
            let version = match &spec[2] {
                "==" | "@" => spec[3].to_owned(),
                operator => format!("{}{}", operator.trim_start_matches('@'), &spec[3]),
            };
            Some((spec[1].to_owned(), version))
        })
        .collect()
}

/// The component and version a sentence says to move to: "upgrade X to N", else the first
/// "X N" after a change word ("requires Java 17"), else the first before it ("Spring Boot 2.5 is
/// compatible").
fn version_change(sentence: &str) -> Option<(String, String)> {
    // "does not support Java 17", "do not upgrade to 3.0": a change the source advises against.
    if NEGATION.is_match(sentence) {
        return None;
    }
    if let Some(moved) = MOVE_TO.captures(sentence) {
        if let Some(pair) = component(&moved[1], &moved[2]) {
            return Some(pair);
        }
    }
    let word = CHANGE_WORD.find(sentence)?;
    let pairs: Vec<(usize, String, String)> = NAME_VERSION
        .captures_iter(sentence)
        .filter_map(|c| {
            let start = c.get(0)?.start();
            component(&c[1], &c[2]).map(|(name, version)| (start, name, version))
        })
        .collect();
    let after = pairs.iter().find(|(start, ..)| *start >= word.end());
    after
        .or_else(|| pairs.first())
        .map(|(_, name, version)| (name.clone(), version.clone()))
}

/// `name` without the opening words that name nothing, and `version` unless it reads as a year.
fn component(name: &str, version: &str) -> Option<(String, String)> {
    let words: Vec<&str> = name
        .split(' ')
        .skip_while(|w| NOT_COMPONENTS.contains(&w.to_lowercase().as_str()))
        .collect();
    let major: u32 = version
        .split('.')
        .next()?
        .trim_end_matches('+')
        .parse()
        .ok()?;
    if words.is_empty() || major >= 1900 {
        return None;
    }
    Some((words.join(" "), version.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_in_any_form_become_versions_and_the_manifest_they_change() {
        let so = hit(
            "so",
            "For apt (Ubuntu, Debian...): sudo apt-get install python3-dev # for python3.x; sudo dnf install python3-devel. \
             Pin it: pip install markupsafe==2.0.1, or move to Jinja2>=3.0. \
             Your package.json should then show \"node-fetch\": \"^2.7.0\" after npm install node-fetch@2. \
             .NET CLI: dotnet add package Newtonsoft.Json --version 13.0.3. \
             Add javax.xml.bind:jaxb-api:2.3.1 to the pom, then run ./gradlew wrapper --gradle-version 8.5 to update the wrapper.",
        );
        let actions = HeuristicActionExtractor.actions(&[so]);
        let commands: Vec<&str> = actions
            .commands
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        for expected in [
            "sudo apt-get install python3-dev",
            "sudo dnf install python3-devel",
            "pip install markupsafe==2.0.1",
            "dotnet add package Newtonsoft.Json --version 13.0.3",
        ] {
            assert!(commands.contains(&expected), "{expected}: {commands:?}");
        }
        let versions: Vec<(&str, &str)> = actions
            .version_changes
            .iter()
            .map(|v| (v.component.as_str(), v.version.as_str()))
            .collect();
        for expected in [
            ("markupsafe", "2.0.1"),
            ("node-fetch", "2.7.0"),
            ("Newtonsoft.Json", "13.0.3"),
            ("jaxb-api", "2.3.1"),
            ("gradle", "8.5"),
        ] {
            assert!(versions.contains(&expected), "{expected:?}: {versions:?}");
        }
        let files: Vec<&str> = actions
            .file_changes
            .iter()
            .map(|f| f.file.as_str())
            .collect();
        assert!(
            files.contains(&"requirements.txt") && files.contains(&"package.json"),
            "the manifests the pins change: {files:?}"
        );
    }

    #[test]
    fn commands_for_another_version_of_the_askers_setup_are_left_out() {
        let old = Hit::new(
            "old",
            "Java 9 Migration Guide",
            "The module is not resolved by default: run `java --add-modules java.xml.bind -jar app.jar`.",
            1.0,
            "web",
        );
        let current = Hit::new(
            "current",
            "JAXBException after moving to Java 11",
            "Add the API to pom.xml and run `mvn clean package`; on Java 9 it was only hidden.",
            1.0,
            "web",
        );
        let actions = HeuristicActionExtractor
            .actions_for("NoClassDefFoundError on Java 11", &[old.clone(), current]);
        let commands: Vec<&str> = actions
            .commands
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        assert_eq!(commands, ["mvn clean package"]);
        // Without a version asked, every source's commands count.
        assert_eq!(HeuristicActionExtractor.actions(&[old]).commands.len(), 1);
    }

    fn hit(id: &str, text: &str) -> Hit {
        Hit::new(id, id, text, 1.0, "web")
    }

    #[test]
    fn commands_come_from_code_blocks_shell_lines_inline_code_and_run_phrases() {
        let text = "Clear the cache:\n```bash\n$ mvn dependency:purge-local-repository\n./gradlew clean build --refresh-dependencies\necho done\n```\nThen `mvn clean install -U` or run npm ci --legacy-peer-deps to reinstall.\n$ git pull --rebase";
        assert_eq!(
            commands(text),
            [
                "mvn dependency:purge-local-repository",
                "./gradlew clean build --refresh-dependencies",
                "mvn clean install -U",
                "npm ci --legacy-peer-deps",
                "git pull --rebase",
            ]
        );
        assert!(commands("Use git to track it. Maven is `mvn`.").is_empty());
        assert!(
            commands("```js\nexport default defineConfig({\n```\nNote: node versions below 18 are unsupported.").is_empty(),
            "source code and clauses are not commands"
        );
    }

    #[test]
    fn install_lines_in_prose_are_commands_and_their_pins_are_version_changes() {
        let source = hit(
            "so",
            "MarkupSafe 2.1 removed soft_unicode. Downgrade it with pip install markupsafe==2.0.1, or better, run pip install -U \"Jinja2>=3.0\" to get a Jinja2 that no longer imports it. pip install is slow on this machine.",
        );
        let actions = HeuristicActionExtractor.actions(&[source]);
        let commands: Vec<&str> = actions
            .commands
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        assert!(
            commands.contains(&"pip install markupsafe==2.0.1"),
            "{commands:?}"
        );
        assert!(
            commands.contains(&"pip install -U \"Jinja2>=3.0\""),
            "{commands:?}"
        );
        assert!(
            !commands.iter().any(|c| c.contains("is slow")),
            "{commands:?}"
        );
        let versions: Vec<(&str, &str)> = actions
            .version_changes
            .iter()
            .map(|v| (v.component.as_str(), v.version.as_str()))
            .collect();
        assert!(versions.contains(&("markupsafe", "2.0.1")), "{versions:?}");
        assert!(versions.contains(&("Jinja2", ">=3.0")), "{versions:?}");
        assert_eq!(
            pinned_versions("npm i react@18.2.0 lodash"),
            [("react".to_owned(), "18.2.0".to_owned())]
        );
        assert_eq!(
            pinned_versions("cargo add serde@^1.0"),
            [("serde".to_owned(), "^1.0".to_owned())]
        );
    }

    #[test]
    fn a_source_printing_a_500_line_script_gives_a_few_commands() {
        let script: String = (0..500)
            .map(|i| format!("npm install package-{i}@1.0.{i}\n"))
            .collect();
        let source = hit("gist", &format!("The setup script:\n```sh\n{script}```\n"));
        let actions = HeuristicActionExtractor.actions(&[source]);
        assert_eq!(
            actions.commands.len(),
            HeuristicActionExtractor::MAX_COMMANDS_PER_SOURCE
        );
        assert_eq!(actions.commands[0].command, "npm install package-0@1.0.0");
    }

    #[test]
    fn versions_are_read_beside_the_words_that_ask_for_a_change() {
        let cases = [
            (
                "Upgrade to Spring Boot 2.5 or later to fix it.",
                Some(("Spring Boot", "2.5")),
            ),
            (
                "Upgrade Spring Boot to 2.7.18 first.",
                Some(("Spring Boot", "2.7.18")),
            ),
            ("Spring Boot 3.x requires Java 17.", Some(("Java", "17"))),
            (
                "Hibernate 6.x is compatible with Jakarta EE 10.",
                Some(("Jakarta EE", "10")),
            ),
            ("Spring Boot 1.5 was released in 2017.", None),
            ("Released in 2023, it requires nothing.", None),
            ("Spring Boot 1.5 does not support Java 17.", None),
            ("Don't upgrade to Hibernate 6.x yet.", None),
        ];
        for (sentence, want) in cases {
            let got = version_change(sentence);
            assert_eq!(
                got.as_ref().map(|(c, v)| (c.as_str(), v.as_str())),
                want,
                "{sentence}"
            );
        }
    }

    #[test]
    fn each_action_names_its_source_and_the_first_change_leads() {
        let sources = [
            hit(
                "so",
                "Spring Boot 1.5 repackages cglib, which fails on Java 17 [1]. Upgrade to Spring Boot 2.5 or later. Change the parent version in pom.xml and run mvn clean install -U.",
            ),
            hit(
                "docs",
                "Spring Boot 2.5 requires Java 8 or later. Upgrade to Spring Boot 2.5 to run on Java 17.",
            ),
        ];
        let actions = HeuristicActionExtractor.actions(&sources);
        assert_eq!(
            actions.primary.as_deref(),
            Some("upgrade Spring Boot to 2.5")
        );
        assert_eq!(actions.version_changes.len(), 2, "{actions:?}");
        assert_eq!(actions.version_changes[0].source.0, "so");
        assert_eq!(actions.file_changes[0].file, "pom.xml");
        assert!(actions.file_changes[0].change.contains("parent version"));
        assert_eq!(actions.commands[0].command, "mvn clean install -U");
        assert!(
            actions.confidence > 0.85,
            "three kinds, and two sources agree: {}",
            actions.confidence
        );
    }

    #[test]
    fn sources_that_state_no_action_give_none() {
        let actions = HeuristicActionExtractor.actions(&[hit(
            "wiki",
            "The Final Five were the members of the 2016 United States Olympic women's gymnastics team.",
        )]);
        assert!(actions.is_empty() && actions.primary.is_none());
        assert_eq!(actions.confidence, 0.0);
    }
}
