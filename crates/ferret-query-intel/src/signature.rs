//! The signature of an error as the languages and package managers coding agents meet print it:
//! the ecosystem, the error's type or code, and what it is about, with everything that changes
//! between machines and runs left out (paths, line and column numbers, addresses, timestamps,
//! numbers). The same failure asked again from another checkout, or in other words around the
//! same message, has the same signature.

use std::sync::LazyLock;

use regex::Regex;

/// One kind of error line: the ecosystem it belongs to (empty: read from the text around it),
/// the pattern that finds it, whose first group is the error's type or code and whose second
/// (when there is one) is its message, and how much it says of the failure itself.
struct Kind {
    ecosystem: &'static str,
    pattern: Regex,
    weight: i32,
}

fn kind(ecosystem: &'static str, weight: i32, pattern: &str) -> Kind {
    Kind {
        ecosystem,
        pattern: Regex::new(pattern).unwrap_or_else(|e| unreachable!("a fixed pattern: {e}")),
        weight,
    }
}

/// The error lines known. A log holds several (a compiler's error under the build tool's
/// "failed"); each line found is weighed, and the one that says most of the failure itself is
/// read: a coded error over a named one, a named one over a bare `error:`.
static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
    vec![
        // rustc: error[E0382]: borrow of moved value: `x`
        kind("rust", 6, r"(?m)^error\[(E\d{4})\]:\s*(.+)$"),
        // A Rust panic: the message after "panicked at <place>:" (today's), or quoted (older).
        kind(
            "rust",
            5,
            r"thread '[^']*' (panicked) at [^\n']*:\n([^\n]+)",
        ),
        kind("rust", 5, r"thread '[^']*' (panicked) at '([^']+)'"),
        // npm / yarn / pnpm: npm ERR! code ERESOLVE, npm error code E404
        kind(
            "npm",
            6,
            r"(?m)^npm (?:ERR!|error) code (\w+)[ \t]*(?:\nnpm (?:ERR!|error) (?:[A-Z]\w+ )?([^\n]*))?",
        ),
        kind("pnpm", 6, r"(?m)\b(ERR_PNPM_\w+)\b\W*(.*)$"),
        // Node's coded errors: Error [ERR_REQUIRE_ESM]: require() of ES Module ...
        kind("js", 6, r"(?m)\b(?:\w*Error) \[(ERR_\w+)\]:\s*(.+)$"),
        // TypeScript: src/a.ts:1:21 - error TS7016: Could not find a declaration file ...
        kind("js", 6, r"(?m)\berror (TS\d{4,5}):\s*(.+)$"),
        // .NET compilers and MSBuild: error CS0246: ..., error NETSDK1045: ..., error NU1101: ...
        kind(
            "dotnet",
            6,
            r"(?m)\berror ((?:CS|NETSDK|MSB|NU|BC|FS|CA|IDE)\d{4,5}):\s*(.+?)(?:\s+\[[^\]\n]*\])?\s*$",
        ),
        // Go: panic: runtime error: ..., a compiler's or the go command's file:line: message,
        // go: module ...: not found
        kind("go", 5, r"(?m)^panic: (runtime error)?:?\s*(.+)$"),
        kind("go", 3, r"(?m)^\S+\.go:\d+(?::\d+)?:\s*()(.+)$"),
        // The go command's import chain: the error after the last package, on indented lines.
        kind(
            "go",
            4,
            r"(?m)^go: \S+ imports\n\t\S+: (?:\S+: )*()([^\n]+(?:\n\t[^\n]+)*)",
        ),
        kind("go", 2, r"(?m)^go: ()(.+)$"),
        kind("go", 3, r"(?m)^(cgo): (.+)$"),
        // javac, alone or under Maven: App.java:5: error: …, App.java:[5,21] …
        kind(
            "jvm",
            4,
            r"(?m)\.java:(?:\[\d+,\d+\]|\d+:)\s*(?:error:\s*)?()([^\n]+)$",
        ),
        // CMake: the message on the lines after "CMake Error at <file>:<line> (message):".
        kind("cmake", 4, r"CMake Error[^\n]*:\s*\n\s*()([^\n]+)"),
        // Gradle: the innermost "> " line under "What went wrong:".
        kind(
            "gradle",
            4,
            r"\* What went wrong:\n(?:[^\n]+\n)*?>\s*(?:BUG! exception in phase '[^'\n]*' in source unit '[^'\n]*'\s*)?()([^\n]+)\n(?:[^>*\n][^\n]*\n)*?(?:\s*\n|\* Try)",
        ),
        // A chain of causes (cargo, anyhow, Gradle): the indented line after "Caused by:".
        kind("", 3, r"(?m)^Caused by:\n\s+()(\S[^\n]*)$"),
        // Linkers and C/C++ compilers.
        kind("c", 5, r"(undefined reference) to [`'\x22]?([^`'\x22\n]+)"),
        kind("c", 5, r"(?m)((?i:fatal error)): ([^\n]+)$"),
        kind("", 2, r"(?m)(?:^|\s)(error): ([^\n]+)$"),
        // pip: ERROR: Could not find a version that satisfies the requirement foo==1.0
        kind(
            "pip",
            5,
            r"(?m)^ERROR: (Could not find a version|No matching distribution|Cannot install|ResolutionImpossible)([^\n]*)$",
        ),
        // Python, JavaScript, the JVM and .NET: <Type>Error: message, <Type>Exception: message.
        kind(
            "",
            4,
            r"(?m)\b((?:[A-Za-z_][\w$]*\.)*(?:[A-Z][\w$]*)?(?:Error|Exception|Warning|Exit))(?::\s*|\s*$)([^\n]*)",
        ),
    ]
});

/// Lines that report that something failed without saying what: a build tool's or installer's
/// wrapper around the error that caused it.
static WRAPPER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)subprocess-exited-with-error|exit (?:code|status)|returned \d+ exit status|build failed|failed to execute goal|a jni error has occurred|could not build wheels|metadata-generation-failed|legacy-install-failure|process completed with|exited with|command failed|^(?:finding|found|downloading|extracting|upgraded|added) |compilation failed|see the compiler error output")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Tokens that differ between machines and runs, dropped from a message: paths, `file:line:col`,
/// addresses, hex, dates and times, and bare numbers.
static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        \(?[A-Za-z]:\\[^\s'"`)]*\)?          # a Windows path
        | (?:^|[\s(\['"`])(?:\.{0,2}/|~/)[^\s'"`)\]]*[)\]]?   # a Unix path, from where a word starts
        | \b\S+\.\w{1,4}:\d+(?::\d+)?\b       # file.ext:line:col
        | \S*/\S+\.[A-Za-z]{1,5}\b            # a file under some folder: <root>/web/package.json
        | \b0x[0-9a-fA-F]+\b                  # an address
        | \b\d{4}-\d{2}-\d{2}[T\s]?[\d:.]*Z?  # a date and time
        | \b\d+(?:\.\d+)*\b                   # a number (a line, a count, a version)
        "#,
    )
    .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// An error as a coding agent pastes it, read: the ecosystem, the error's type or code, what it
/// is about (the symbol, the package or module), the versions it names, and the signature the
/// same failure has on any machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReading {
    /// `python`, `js`, `npm`, `pnpm`, `rust`, `go`, `jvm`, `maven`, `gradle`, `dotnet`, `c`,
    /// `cmake`, `pip`, or `error`.
    pub ecosystem: String,
    /// The error's type or code: `ImportError`, `E0277`, `ERESOLVE`, `CS0246`, `panicked`.
    pub kind: String,
    /// The name the message is about: `soft_unicode`, `pthread_create`, `Newtonsoft`.
    pub symbol: Option<String>,
    /// The package or module it comes from: `markupsafe`, `node-fetch`, `net.sf.cglib.proxy`.
    pub package: Option<String>,
    /// The versions the error names (`torch==1.7.1`, `class file version 61.0`).
    pub versions: Vec<String>,
    /// The error's line as a search engine matches it: its code and message, without paths and
    /// places, versions kept (`ImportError cannot import name soft_unicode from markupsafe`).
    pub line: String,
    /// `ecosystem:kind:message`, the message without paths, numbers, addresses and times.
    pub signature: String,
}

/// Names quoted in a message: 'x', "x", `x` (a backtick closed by a quote too, as C compilers
/// write them).
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"['"`\u{2018}\u{201c}]([A-Za-z_@$.][\w@$./:<>-]{0,80})['"`\u{2019}\u{201d}]"#)
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});
/// Messages that say which name comes from which package.
static NAME_FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:cannot import name|has no attribute|has no exported member|does not provide an export named)\s+['"`]?([\w$.]+)['"`]?(?:\s+from\s+['"`]?([\w@$./-]+)['"`]?)?"#)
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});
/// `module 'numpy' has no attribute 'float'`: the module first.
static MODULE_HAS_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)module\s+['"`]([\w.-]+)['"`]\s+has no attribute\s+['"`]([\w$]+)['"`]"#)
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});
/// Messages about a package or module alone.
static PACKAGE_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:no module named|cannot find module|cannot find package|could not resolve|module not found: error: can't resolve|requirement|for crate|custom build command for|package|module|assembly)\s+['"`]?(@?[A-Za-z][\w.@/-]*?)['"`,]?(?:\s|$|==|,)"#)
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});
/// A qualified class or path: `net/sf/cglib/proxy/Enhancer`, `javax.xml.bind.JAXBException`.
static QUALIFIED_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:[a-z_][a-z0-9_]*[./]){2,})([A-Z][\w$]*)\b")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});
/// Versions an error names: a pin (`torch==1.7.1`, `react@18.2.0`) or a named number
/// (`class file version 61.0`, `rustc 1.70.0`, `.NET 8.0`).
static NAMED_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(@?[A-Za-z][\w.-]*(?:==|@|\s+version\s+|\s+v?)\d+(?:\.\d+)+)\b")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// A message ending in the value it reports: `… value: NotPresent`, `… variant: Io`.
static VALUE_TAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:value|variant):\s*`?([A-Za-z_]\w*)`?\s*$")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Words quoted in messages that name no symbol.
const NOT_SYMBOLS: [&str; 6] = ["main", "self", "this", "none", "null", "undefined"];

/// Read the error `text` shows; `None` when no line of it reads as an error.
pub fn read_error(text: &str) -> Option<ErrorReading> {
    // Lines as a CI runner or a container build prints them ("#9 0.912 ", "[10:42:07.811] ")
    // read as the tool printed them.
    let text = &*LINE_PREFIX.replace_all(text, "");
    // (weight, position, ecosystem, code, message): the weightiest line, the first among equals.
    let mut best: Option<(i32, usize, &str, &str, &str)> = None;
    for kind in KINDS.iter() {
        for found in kind.pattern.captures_iter(text) {
            let code = found.get(1).map_or("", |m| m.as_str()).trim();
            let message = found.get(2).map_or("", |m| m.as_str()).trim();
            if code.is_empty() && normalized(message).is_empty() {
                continue;
            }
            let at = found.get(0).map_or(0, |m| m.start());
            // A type named at the end of an address (`…/display/MAVEN/MojoExecutionException`)
            // is a link, not an error line.
            if text[..at].ends_with('/') {
                continue;
            }
            let mut weight = kind.weight;
            // A type named with no message says less than an error line with one.
            if !code.is_empty() && message.is_empty() {
                weight -= 1;
            }
            // A bare `Error` names no type; a wrapper says only that something failed.
            if code == "Error" || code == "Exception" {
                weight -= 1;
            }
            if WRAPPER.is_match(message) || WRAPPER.is_match(code) {
                weight -= 4;
            }
            let better = best.is_none_or(|(w, p, ..)| weight > w || (weight == w && at < p));
            if better {
                best = Some((weight, at, kind.ecosystem, code, message));
            }
        }
    }
    let (_, _, ecosystem, mut code, mut raw_message) = best?;
    // "Unhandled Exception: System.IO.FileNotFoundException: …": the type named inside.
    while matches!(code, "Error" | "Exception") {
        let Some(inner) = LEADING_TYPE.captures(raw_message) else {
            break;
        };
        let (Some(named), Some(rest)) = (inner.get(1), inner.get(2)) else {
            break;
        };
        code = named.as_str();
        raw_message = rest.as_str();
    }
    let ecosystem = match ecosystem {
        "" => ecosystem_of(text, code),
        known => known,
    };
    let raw_message = HELP_TAIL.replace(raw_message, "");
    let raw_message = raw_message.split_whitespace().collect::<Vec<_>>().join(" ");
    let message = normalized(&raw_message);
    // A qualified type reads the same under any import path: `requests.exceptions.X` is X.
    let code = code.rsplit('.').next().unwrap_or(code);
    let (symbol, package) = subject(&raw_message);
    Some(ErrorReading {
        ecosystem: ecosystem.to_owned(),
        kind: code.to_owned(),
        symbol,
        package,
        versions: NAMED_VERSION
            .captures_iter(&raw_message)
            .map(|c| c[1].to_owned())
            .collect(),
        line: query_line(code, &raw_message),
        signature: format!("{ecosystem}:{code}:{message}"),
    })
}

/// What a runner puts before each line of a tool's output: a build step and its seconds
/// (`#9 0.912`), a clock (`[10:42:07.811]`, `10:42:07`), seconds alone (`3.512`).
static LINE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:#\d+ )?(?:\[?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]? ?|\d+\.\d{3} )")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// A message that opens with the type of the error it reports.
static LEADING_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception)):\s*(.*)$")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Maven's "-> [Help 1]" and kin after a message.
static HELP_TAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s*->\s*\[Help \d+\]\s*$").unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Paths, `file:line` references and addresses, which a search engine matches nothing by.
static PLACES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        \(?[A-Za-z]:\\[^\s'"`)\]]*\)?
        | (?:^|[\s(\[])(?:\.{0,2}/|~/)[^\s'"`)\]]*[)\]]?
        | \b\S+\.\w{1,4}:\d+(?::\d+)?\b
        | \b0x[0-9a-fA-F]+\b
        | \bhttps?://\S+
        "#,
    )
    .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Longest error line kept for a query, in characters.
const MAX_LINE_CHARS: usize = 90;

/// The error as a search engine matches reports of it: its code and message, without paths,
/// places, quotes or brackets, versions kept, cut on a word at [`MAX_LINE_CHARS`].
fn query_line(code: &str, message: &str) -> String {
    let without_classes = CLASS_PATH.replace_all(message, " ");
    let message = if without_classes.split_whitespace().count() >= 3 {
        without_classes
    } else {
        std::borrow::Cow::Borrowed(message)
    };
    let message = PLACES.replace_all(&message, " ");
    let words = message
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '\'' | '"' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | ';' | ','
                )
        })
        .map(|w| w.trim_matches(|c: char| matches!(c, ':' | '.' | '>' | '<')))
        .filter(|w| !w.is_empty());
    let generic = matches!(code, "error" | "fatal error" | "Error" | "panicked" | "");
    let mut line = if generic {
        String::new()
    } else {
        code.to_owned()
    };
    for word in words {
        if line.chars().count() + word.chars().count() + 1 > MAX_LINE_CHARS {
            break;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    line
}

/// The symbol and the package a message is about.
fn subject(message: &str) -> (Option<String>, Option<String>) {
    if let Some(c) = MODULE_HAS_NO.captures(message) {
        return (Some(c[2].to_owned()), Some(c[1].to_owned()));
    }
    if let Some(c) = NAME_FROM.captures(message) {
        return (
            Some(c[1].to_owned()),
            c.get(2).map(|m| m.as_str().to_owned()),
        );
    }
    // A class the message is about ("NoClassDefFoundError: javax/xml/bind/JAXBException"),
    // not one it mentions on the way ("com/acme/App has been compiled by a more recent …").
    let about_a_class = CLASS_PATH
        .replace_all(message, " ")
        .split_whitespace()
        .count()
        < 3;
    if let Some(c) = QUALIFIED_CLASS.captures(message).filter(|_| about_a_class) {
        let package = c[1].trim_end_matches(['.', '/']).replace('/', ".");
        return (Some(c[2].to_owned()), Some(package));
    }
    let package = PACKAGE_ONLY
        .captures(message)
        .map(|c| c[1].trim_end_matches(['.', ':']).to_owned())
        .filter(|p| p.chars().any(char::is_alphabetic));
    // "called `Result::unwrap()` on an `Err` value: NotPresent": the value is what it is about.
    if let Some(value) = VALUE_TAIL.captures(message) {
        return (Some(value[1].to_owned()), package);
    }
    let symbol = QUOTED
        .captures_iter(message)
        .map(|c| c[1].to_owned())
        .find(|q| Some(q) != package.as_ref() && !NOT_SYMBOLS.contains(&q.to_lowercase().as_str()))
        // A message that is one name (a linker's undefined symbol) is about that name.
        .or_else(|| {
            let bare = message.trim();
            (!bare.is_empty()
                && bare
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_$:.@".contains(c)))
            .then(|| bare.to_owned())
        });
    (symbol, package)
}

/// The signature of the error `text` shows, `ecosystem:type:message` with the message's volatile
/// parts left out and its words lower-cased (`python:ImportError:cannot import name soft_unicode
/// from markupsafe`); `None` when no line of it reads as an error.
pub fn language_error_signature(text: &str) -> Option<String> {
    read_error(text).map(|reading| reading.signature)
}

/// The message without what changes between runs: quotes kept as their words, lower case,
/// single spaces.
fn normalized(message: &str) -> String {
    // What a message adds in brackets is where and from what (a path, the versions on offer,
    // the importer), which differs between projects; a class of the asker's own code named
    // inside a longer message is where it happened, not what.
    let message = PARENTHESISED.replace_all(message, " ");
    let without_classes = CLASS_PATH.replace_all(&message, " ");
    let message = if without_classes.split_whitespace().count() >= 3 {
        without_classes
    } else {
        message
    };
    let message = VOLATILE.replace_all(&message, " ");
    let words: Vec<String> = message
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ','))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | ':' | ';' | '[' | ']')))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.join(" ")
}

/// A bracketed aside: `(/path/to/file.py)`, `(from versions: 1.0, 2.0)`, `(imported by x)`.
static PARENTHESISED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\([^()\n]*\)").unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// A qualified class: `com/acme/reports/ReportApplication`, `lombok.javac.apt.LombokProcessor`.
static CLASS_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[a-z_][\w$]*[./]){2,}[A-Z][\w$]*\b")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Python's own error types that no other language's errors share.
const PYTHON_ERRORS: [&str; 16] = [
    "ImportError",
    "ModuleNotFoundError",
    "AttributeError",
    "KeyError",
    "IndexError",
    "NameError",
    "ValueError",
    "IndentationError",
    "ZeroDivisionError",
    "FileNotFoundError",
    "PermissionError",
    "RecursionError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "OSError",
    "RuntimeError",
];

/// The ecosystem of an error named `<Type>Error` or `<Type>Exception`, from the text around it.
fn ecosystem_of(text: &str, code: &str) -> &'static str {
    let has = |needle: &str| text.contains(needle);
    let python = has("Traceback (most recent call last)") || has(".py\"") || has(".py:");
    if python || PYTHON_ERRORS.contains(&code) {
        "python"
    } else if has("Cargo.toml") || has("cargo ") || has("rustc") || has(".rs:") {
        "rust"
    } else if has("\tat ") || has("    at java.") || code.contains("java.") {
        "jvm"
    } else if has("[ERROR]") || has("mvn ") || has("maven") {
        "maven"
    } else if has("gradle") {
        "gradle"
    } else if has("System.") || code.starts_with("System") || has("dotnet ") {
        "dotnet"
    } else if has("node:")
        || [".js:", ".ts:", ".jsx:", ".tsx:", ".mjs:", ".cjs:"]
            .iter()
            .any(|e| has(e))
        || has("node_modules")
        || has("npm ")
        || has("Uncaught ")
        || has("package.json")
    {
        "js"
    } else if has("gcc") || has("g++") || has("clang") || has("/ld:") || has(".c:") || has(".cpp:")
    {
        "c"
    } else if has(".go:") || has("go build") || has("go run") {
        "go"
    } else if has("pip ") {
        "python"
    } else if has("Caused by:") || (code.ends_with("Exception") && !code.contains('.')) {
        "jvm"
    } else {
        "error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(text: &str) -> String {
        language_error_signature(text).unwrap_or_else(|| panic!("no signature: {text}"))
    }

    #[test]
    fn each_ecosystem_is_read_and_machines_do_not_matter() {
        let python = |path: &str| {
            format!(
                "Traceback (most recent call last):\n  File \"{path}/app.py\", line 3, in <module>\n    from flask import Flask\nImportError: cannot import name 'soft_unicode' from 'markupsafe' ({path}/markupsafe/__init__.py)"
            )
        };
        let here = signature(&python("/home/ann/venv/lib/python3.11/site-packages"));
        assert_eq!(
            here,
            "python:ImportError:cannot import name soft_unicode from markupsafe"
        );
        assert_eq!(signature(&python("C:\\Users\\bob\\venv\\Lib")), here);
        assert_eq!(
            signature("node:internal/modules/cjs/loader:1080\n  throw err;\nError: Cannot find module 'express'\nRequire stack:\n- /srv/app/index.js"),
            "js:Error:cannot find module express"
        );
        assert_eq!(
            signature("TypeError: Cannot read properties of undefined (reading 'map')\n    at App (/src/App.js:12:5)"),
            "js:TypeError:cannot read properties of undefined"
        );
        assert_eq!(
            signature(
                "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"
            ),
            "npm:ERESOLVE:unable to resolve dependency tree"
        );
        assert_eq!(
            signature("error[E0382]: borrow of moved value: `config`\n --> src/main.rs:12:20"),
            "rust:E0382:borrow of moved value config"
        );
        assert_eq!(
            signature("thread 'main' panicked at src/main.rs:4:37:\ncalled `Option::unwrap()` on a `None` value"),
            "rust:panicked:called option::unwrap on a none value"
        );
        assert_eq!(
            signature("panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a3f2b]"),
            "go:runtime error:invalid memory address or nil pointer dereference"
        );
        assert_eq!(
            signature("Exception in thread \"main\" java.lang.NoClassDefFoundError: net/sf/cglib/proxy/Enhancer\n\tat com.example.App.main(App.java:10)"),
            "jvm:NoClassDefFoundError:net/sf/cglib/proxy/enhancer"
        );
        assert_eq!(
            signature("/usr/bin/ld: main.o: in function `main':\nmain.c:(.text+0x1e): undefined reference to `pthread_create'"),
            "c:undefined reference:pthread_create"
        );
        assert_eq!(
            signature("Program.cs(3,7): error CS0246: The type or namespace name 'Newtonsoft' could not be found"),
            "dotnet:CS0246:the type or namespace name newtonsoft could not be found"
        );
        assert_eq!(
            signature("ERROR: Could not find a version that satisfies the requirement torch==1.7.1 (from versions: 2.0.0, 2.1.0)"),
            "pip:Could not find a version:that satisfies the requirement torch=="
        );
    }

    #[test]
    fn an_error_is_read_for_its_symbol_package_and_versions() {
        let read = |text: &str| read_error(text).unwrap_or_else(|| panic!("not read: {text}"));
        let python = read("ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/venv/lib/python3.11/site-packages/markupsafe/__init__.py)");
        assert_eq!(
            (python.ecosystem.as_str(), python.kind.as_str()),
            ("python", "ImportError")
        );
        assert_eq!(python.symbol.as_deref(), Some("soft_unicode"));
        assert_eq!(python.package.as_deref(), Some("markupsafe"));
        let numpy = read("AttributeError: module 'numpy' has no attribute 'float'.");
        assert_eq!(
            (numpy.symbol.as_deref(), numpy.package.as_deref()),
            (Some("float"), Some("numpy"))
        );
        let node = read("Error: Cannot find module 'express'\nRequire stack:\n- /srv/app/index.js");
        assert_eq!(node.package.as_deref(), Some("express"));
        let jvm = read("java.lang.NoClassDefFoundError: javax/xml/bind/JAXBException");
        assert_eq!(
            (jvm.symbol.as_deref(), jvm.package.as_deref()),
            (Some("JAXBException"), Some("javax.xml.bind"))
        );
        let linker = read("main.c:(.text+0x1e): undefined reference to `pthread_create'");
        assert_eq!(linker.symbol.as_deref(), Some("pthread_create"));
        let pip = read("ERROR: Could not find a version that satisfies the requirement torch==1.7.1 (from versions: 2.0.0)");
        assert_eq!(pip.package.as_deref(), Some("torch"));
        assert_eq!(pip.versions, ["torch==1.7.1"]);
        let class = read("java.lang.UnsupportedClassVersionError: com/example/App has been compiled by a more recent version of the Java Runtime (class file version 61.0)");
        assert!(
            class.versions.iter().any(|v| v.ends_with("version 61.0")),
            "{class:?}"
        );
    }

    #[test]
    fn build_tools_and_runners_are_read_as_their_tool_printed_them() {
        for (log, expected) in [
            (
                "/usr/share/dotnet/sdk/7.0.410/Microsoft.NET.TargetFrameworkInference.targets(160,5): error NETSDK1045: The current .NET SDK does not support targeting .NET 8.0. [/home/a/App.csproj]",
                "dotnet:NETSDK1045:the current net sdk does not support targeting net",
            ),
            (
                "src/server.ts:1:21 - error TS7016: Could not find a declaration file for module 'express'.",
                "js:TS7016:could not find a declaration file for module express",
            ),
            (
                "Error [ERR_REQUIRE_ESM]: require() of ES Module /srv/node_modules/node-fetch/src/index.js from /srv/index.js not supported.",
                "js:ERR_REQUIRE_ESM:require of es module from not supported",
            ),
            (
                "[10:42:07.811]  ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up to date with <ROOT>/apps/web/package.json",
                "pnpm:ERR_PNPM_OUTDATED_LOCKFILE:cannot install with frozen-lockfile because pnpm-lock.yaml is not up to date with",
            ),
            (
                "#9 0.912 CMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n#9 0.912   Could NOT find OpenSSL, try to set the path\n",
                "cmake::could not find openssl try to set the path",
            ),
            (
                "[ERROR] /home/k/src/main/java/com/acme/Filter.java:[5,21] package javax.servlet does not exist",
                "jvm::package javax.servlet does not exist",
            ),
            (
                "# runtime/cgo\ncgo: C compiler \"gcc\" not found: exec: \"gcc\": executable file not found in $PATH",
                "go:cgo:c compiler gcc not found exec gcc executable file not found in $path",
            ),
            (
                "go: finding module for package github.com/golang/lint/golint\ngo: example.com/tools imports\n\tgithub.com/golang/lint/golint: github.com/golang/lint@v0.0.0-2021: parsing go.mod:\n\tmodule declares its path as: golang.org/x/lint\n\t        but was required as: github.com/golang/lint",
                "go::parsing go.mod module declares its path as golang.org/x/lint but was required as github.com/golang/lint",
            ),
            (
                "* What went wrong:\nExecution failed for task ':app:compileKotlin'.\n> 'compileJava' task (current target is 1.8) and 'compileKotlin' task (current target is 17) jvm target compatibility should be set to the same Java version.\n  Consider using JVM toolchain\n\n* Try:",
                "gradle::compilejava task and compilekotlin task jvm target compatibility should be set to the same java version",
            ),
            (
                "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.11.0:compile on project x: Fatal error compiling: error: release version 17 not supported -> [Help 1]\n[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoExecutionException",
                "maven:error:release version not supported",
            ),
        ] {
            assert_eq!(signature(log), expected, "{log}");
        }
    }

    #[test]
    fn a_chain_of_causes_is_read_at_its_innermost() {
        let cargo = "error: failed to parse manifest at `/home/a/.cargo/registry/x-0.4.1/Cargo.toml`\n\nCaused by:\n  feature `edition2021` is required\n\n  The package requires it.";
        assert_eq!(signature(cargo), "rust::feature edition2021 is required");
    }

    #[test]
    fn text_with_no_error_line_has_no_signature() {
        assert_eq!(
            language_error_signature("How do I rotate the API keys?"),
            None
        );
        assert_eq!(language_error_signature(""), None);
    }

    #[test]
    fn a_whole_log_is_read_without_trouble() {
        let log = format!(
            "{}\nImportError: cannot import name 'x' from 'y'\n",
            "INFO 2024-05-01T10:00:00Z starting worker 17 at 0x7ffde\n".repeat(400)
        );
        assert!(log.len() > 20_000);
        assert_eq!(
            signature(&log),
            "python:ImportError:cannot import name x from y"
        );
    }
}
