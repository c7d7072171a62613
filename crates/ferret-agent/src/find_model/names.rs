//! How model file names are compared and turned into search queries: the stem without its
//! extension, the words of a name (separators and camel case split), the tokens that name a
//! variant of the same model (precision, format, pruning, quantisation) rather than another
//! model, and the family of a base model.

/// Tokens that name a variant of the same weights: precision, format, pruning, EMA.
const VARIANT_TOKENS: [&str; 16] = [
    "fp16",
    "fp32",
    "bf16",
    "fp8",
    "e4m3fn",
    "e5m2",
    "scaled",
    "pruned",
    "emaonly",
    "ema",
    "noema",
    "nonema",
    "full",
    "half",
    "safetensors",
    "ckpt",
];

/// Word sequences a family is written as, and the one name search engines know it by.
const FAMILIES: [(&[&str], &str); 4] = [
    (&["sd", "xl"], "sdxl"),
    (&["stable", "diffusion", "xl"], "sdxl"),
    (&["sd", "1", "5"], "sd15"),
    (&["flux", "1"], "flux1"),
];

/// `name` without a model-file extension.
pub(crate) fn stem(name: &str) -> &str {
    match (
        ferret_core::model_file_extension(name),
        name.rsplit_once('.'),
    ) {
        (Some(_), Some((stem, _))) => stem,
        _ => name,
    }
}

/// The lower-case words of `text`: split at anything not a letter or digit, and where case
/// turns to upper after a lower-case letter or a digit (`juggernautXL_v9Rd` → `juggernaut`,
/// `xl`, `v9`, `rd`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous = None;
            continue;
        }
        if c.is_uppercase()
            && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
            && !current.is_empty()
        {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// True for a quantisation tag's parts (`q4`, `q5_k_m` as `q5`, `k`, `m`, `q8_0`).
fn is_quantisation(word: &str, after_quant: bool) -> bool {
    let quant =
        word.len() >= 2 && word.starts_with('q') && word[1..].chars().all(|c| c.is_ascii_digit());
    quant || (after_quant && matches!(word, "k" | "m" | "s" | "l" | "0" | "1"))
}

/// The words of `name`'s stem with the variant tokens dropped: two files with the same key are
/// the same model in another precision, format or pruning.
fn key_words(name: &str) -> Vec<String> {
    let mut kept = Vec::new();
    let mut after_quant = false;
    for word in stem(name)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
    {
        if is_quantisation(&word, after_quant) {
            after_quant = true;
            continue;
        }
        after_quant = false;
        if !VARIANT_TOKENS.contains(&word.as_str()) {
            kept.push(word);
        }
    }
    kept
}

/// What identifies `name` across variants and separators: `sd_xl_base_1.0_fp16.safetensors`
/// and `sdxl-base-1.0.ckpt` share it.
pub(crate) fn normalized(name: &str) -> String {
    key_words(name).concat()
}

/// The variant tokens `a` and `b` differ by, for a reason ("fp16", "pruned"); empty when they
/// differ only in separators or case.
pub(crate) fn variant_difference(a: &str, b: &str) -> String {
    let all = |name: &str| -> Vec<String> {
        stem(name)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a_words, b_words) = (all(a), all(b));
    let mut differ: Vec<String> = a_words
        .iter()
        .filter(|w| !b_words.contains(w))
        .chain(b_words.iter().filter(|w| !a_words.contains(w)))
        .cloned()
        .collect();
    let extension = |name: &str| name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if extension(a) != extension(b) {
        differ.extend(
            extension(a)
                .into_iter()
                .chain(extension(b))
                .map(|e| format!(".{e}")),
        );
    }
    differ.dedup();
    differ.join(", ")
}

/// The share of `a`'s name words that `b` holds too, from 0 to 1.
pub(crate) fn shared_words(a: &str, b: &str) -> f32 {
    let a_words = key_words(a);
    let b_words = key_words(b);
    if a_words.is_empty() {
        return 0.0;
    }
    let shared = a_words.iter().filter(|w| b_words.contains(w)).count();
    shared as f32 / a_words.len().max(b_words.len()) as f32
}

/// The queries a name is searched by, most specific first: its stem as written, then its words
/// without versions and variant tokens, families written as search engines know them
/// (`sd_xl` → `sdxl`).
pub(crate) fn query_variants(name: &str) -> Vec<String> {
    let stem = stem(name).trim().to_owned();
    let mut core: Vec<String> = Vec::new();
    let mut after_quant = false;
    for word in words(&stem) {
        if is_quantisation(&word, after_quant) {
            after_quant = true;
            continue;
        }
        after_quant = false;
        let version = word.starts_with('v') && word[1..].chars().all(|c| c.is_ascii_digit());
        if VARIANT_TOKENS.contains(&word.as_str()) || (version && word.len() > 1) {
            continue;
        }
        core.push(word);
    }
    let core = join_families(core);
    // Bare numbers (the "1" and "0" of "1.0") only make sense beside their neighbours.
    let core: Vec<String> = core
        .into_iter()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let mut variants = vec![stem];
    let words = core.join(" ");
    if !words.is_empty() && !variants.iter().any(|v| v.eq_ignore_ascii_case(&words)) {
        variants.push(words);
    }
    variants
}

fn join_families(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    'words: while i < words.len() {
        for (sequence, family) in FAMILIES {
            let end = i + sequence.len();
            if end <= words.len() && words[i..end].iter().zip(sequence).all(|(w, s)| w == s) {
                out.push(family.to_owned());
                i = end;
                continue 'words;
            }
        }
        out.push(words[i].clone());
        i += 1;
    }
    out
}

/// The family a base model belongs to ("SDXL 1.0", "Pony" and
/// "stabilityai/stable-diffusion-xl-base-1.0" are all `sdxl`); `None` when it is not known.
pub(crate) fn base_family(base: &str) -> Option<&'static str> {
    let flat: String = base
        .to_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let has = |part: &str| flat.contains(part);
    let family = if has("flux") {
        "flux"
    } else if has("sd3") || has("stablediffusion3") {
        "sd3"
    } else if has("pony") || has("illustrious") || has("xl") {
        // Pony and Illustrious are trained from SDXL, and load its LoRAs and VAEs.
        "sdxl"
    } else if has("sd15") || has("v15") || has("sd1") || has("stablediffusionv1") {
        "sd1"
    } else if has("sd2") || has("stablediffusion2") {
        "sd2"
    } else if has("wan") && has("2") {
        "wan"
    } else if has("hunyuan") {
        "hunyuan"
    } else {
        return None;
    };
    Some(family)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_of_one_model_share_a_normalised_name() {
        assert_eq!(
            normalized("sd_xl_base_1.0_fp16.safetensors"),
            normalized("sd-xl-base-1.0.ckpt")
        );
        assert_eq!(
            normalized("v1-5-pruned-emaonly.safetensors"),
            normalized("v1-5.safetensors")
        );
        assert_eq!(
            normalized("flux1-dev-Q4_K_S.gguf"),
            normalized("flux1-dev.safetensors")
        );
        assert_ne!(
            normalized("add-detail-xl.safetensors"),
            normalized("add_detail.safetensors")
        );
        assert_eq!(
            variant_difference("sdxl_vae_fp16.safetensors", "sdxl_vae.safetensors"),
            "fp16"
        );
    }

    #[test]
    fn a_name_is_searched_as_written_then_by_its_words() {
        assert_eq!(
            query_variants("sd_xl_base_1.0_fp16.safetensors"),
            ["sd_xl_base_1.0_fp16", "sdxl base"]
        );
        assert_eq!(
            query_variants("juggernautXL_v9Rdphoto2Lightning.safetensors"),
            [
                "juggernautXL_v9Rdphoto2Lightning",
                "juggernaut xl rdphoto2 lightning"
            ]
        );
        assert_eq!(query_variants("x.safetensors"), ["x"]);
    }

    #[test]
    fn base_models_fall_into_families() {
        assert_eq!(base_family("SDXL 1.0"), Some("sdxl"));
        assert_eq!(base_family("Pony"), Some("sdxl"));
        assert_eq!(
            base_family("stabilityai/stable-diffusion-xl-base-1.0"),
            Some("sdxl")
        );
        assert_eq!(base_family("SD 1.5"), Some("sd1"));
        assert_eq!(base_family("runwayml/stable-diffusion-v1-5"), Some("sd1"));
        assert_eq!(base_family("Flux.1 D"), Some("flux"));
        assert_eq!(base_family("Other"), None);
    }
}
