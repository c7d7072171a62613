//! The signature of an error as the languages and package managers coding agents meet print it:
//! the ecosystem, the error's type or code, and what it is about, with everything that changes
//! between machines and runs left out (paths, line and column numbers, addresses, timestamps,
//! numbers). The same failure asked again from another checkout, or in other words around the
//! same message, has the same signature.

use std::sync::LazyLock;

use regex::Regex;

/// One kind of error line: the ecosystem it belongs to and the pattern that finds it, whose
/// first group is the error's type or code and whose second (when there is one) is its message.
struct Kind {
    ecosystem: &'static str,
    pattern: Regex,
}

fn kind(ecosystem: &'static str, pattern: &str) -> Kind {
    Kind {
        ecosystem,
        pattern: Regex::new(pattern).unwrap_or_else(|e| unreachable!("a fixed pattern: {e}")),
    }
}

/// The error lines known, most specific first.
static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
    vec![
        // rustc: error[E0382]: borrow of moved value: `x`
        kind("rust", r"(?m)^error\[(E\d{4})\]:\s*(.+)$"),
        // A Rust panic: the message after "panicked at <place>:" (today's), or quoted (older).
        kind("rust", r"thread '[^']*' (panicked) at [^\n']*:\n([^\n]+)"),
        kind("rust", r"thread '[^']*' (panicked) at '([^']+)'"),
        // npm / yarn / pnpm: npm ERR! code ERESOLVE, npm error code E404
        kind("npm", r"(?m)^npm (?:ERR!|error) code (\w+)()"),
        kind("pnpm", r"(?m)^\s*(ERR_PNPM_\w+)\s*(.*)$"),
        // .NET compilers: error CS0246: The type or namespace name 'Foo' could not be found
        kind("dotnet", r"(?m)\berror (CS\d{4}):\s*(.+)$"),
        // Go: panic: runtime error: ..., go: module ...: not found
        kind("go", r"(?m)^panic: (runtime error)?:?\s*(.+)$"),
        kind("go", r"(?m)^go: ()(.+)$"),
        // Linkers and C/C++ compilers.
        kind("c", r"(undefined reference) to [`'\x22]?([^`'\x22\n]+)"),
        kind("c", r"(?m)(fatal error|error): ([^\n]+)$"),
        // pip: ERROR: Could not find a version that satisfies the requirement foo==1.0
        kind(
            "pip",
            r"(?m)^ERROR: (Could not find a version|No matching distribution|Cannot install|ResolutionImpossible)([^\n]*)$",
        ),
        // Python, JavaScript, the JVM and .NET: <Type>Error: message, <Type>Exception: message.
        kind(
            "",
            r"(?m)\b((?:[A-Za-z_][\w$]*\.)*(?:[A-Z][\w$]*)?(?:Error|Exception|Warning|Exit))(?::\s*|\s*$)([^\n]*)",
        ),
    ]
});

/// Tokens that differ between machines and runs, dropped from a message: paths, `file:line:col`,
/// addresses, hex, dates and times, and bare numbers.
static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        \(?[A-Za-z]:\\[^\s'"`)]*\)?          # a Windows path
        | (?:^|[\s(])(?:\.{0,2}/|~/)[^\s'"`)]*\)?   # a Unix path, from where a word starts
        | \b\S+\.\w{1,4}:\d+(?::\d+)?\b       # file.ext:line:col
        | \b0x[0-9a-fA-F]+\b                  # an address
        | \b\d{4}-\d{2}-\d{2}[T\s]?[\d:.]*Z?  # a date and time
        | \b\d+(?:\.\d+)*\b                   # a number (a line, a count, a version)
        "#,
    )
    .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// The signature of the error `text` shows, `ecosystem:type:message` with the message's volatile
/// parts left out and its words lower-cased (`python:ImportError:cannot import name soft_unicode
/// from markupsafe`); `None` when no line of it reads as an error.
pub fn language_error_signature(text: &str) -> Option<String> {
    for kind in KINDS.iter() {
        let Some(found) = kind.pattern.captures(text) else {
            continue;
        };
        let code = found.get(1).map_or("", |m| m.as_str()).trim();
        let message = found.get(2).map_or("", |m| m.as_str());
        let ecosystem = match kind.ecosystem {
            "" => ecosystem_of(text, code),
            known => known,
        };
        let message = normalized(message);
        if code.is_empty() && message.is_empty() {
            continue;
        }
        // A qualified type reads the same under any import path: `requests.exceptions.X` is X.
        let code = code.rsplit('.').next().unwrap_or(code);
        return Some(format!("{ecosystem}:{code}:{message}"));
    }
    None
}

/// The message without what changes between runs: quotes kept as their words, lower case,
/// single spaces.
fn normalized(message: &str) -> String {
    let message = VOLATILE.replace_all(message, " ");
    let words: Vec<String> = message
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ','))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | ':' | ';' | '[' | ']')))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.join(" ")
}

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
    if python || has("pip ") || PYTHON_ERRORS.contains(&code) {
        "python"
    } else if has("Caused by:") || has("\tat ") || has("    at java.") || code.contains("java.") {
        "jvm"
    } else if has("System.") || code.starts_with("System") {
        "dotnet"
    } else if has("node:") || has(".js:") || has(".ts:") || has("node_modules") || has("npm ") {
        "js"
    } else if code.ends_with("Exception") && !code.contains('.') {
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
            "js:TypeError:cannot read properties of undefined reading map"
        );
        assert_eq!(
            signature(
                "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"
            ),
            "npm:ERESOLVE:"
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
            "pip:Could not find a version:that satisfies the requirement torch== from versions"
        );
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
