/**
 * The injection detector's cues: regular expressions over folded text (lower case, accents dropped;
 * normalize.ts), each with a code and a weight (its probability-like strength alone). Written from
 * public descriptions of attack classes (instruction override, prompt extraction, persona switch,
 * fake delimiters, indirect injection aimed at an assistant reading a document, exfiltration
 * through links), in English, French, Spanish, German, Italian, Portuguese, Russian, Chinese and
 * Japanese. Every gap is bounded (`[^.!?\n]{0,40}`), so each rule runs in linear time.
 */

export interface Rule {
  code: string;
  weight: number;
  re: RegExp;
  /** When true, a match whose text names the writer (`my`, `our`, `i gave`) is a self-correction, weighted 0.25. */
  selfAware?: boolean;
  /** Substrings one of which the folded text must contain, when the gate derived from the source is too weak. */
  needs?: string[];
  /**
   * Groups of substrings the folded text must also contain, one of each group, when the cue's opening
   * words are common (`the`, `to`, `two`): every match of the cue contains one of each group, so the
   * gate only skips texts the cue cannot match (docs/decisions.md, "Detector speed").
   */
  also?: string[][];
}

const G = (n: number) => `[^.!?\\n]{0,${n}}?`;
const OVERRIDE_VERB =
  "(?:ignore|ignoring|disregard|forget|skip|bypass|override|overlook|neglect|abandon|discard|erase|set aside|throw out|pay no attention to|do not follow|don'?t follow|stop following|no longer follow)";
const RULE_NOUN =
  '(?:instructions?|prompts?|rules|directions|directives?|guidelines|guidance|constraints|programming|restrictions|guardrails|policies|policy|safeguards|filters|training|commands|orders|conditioning|system message|system prompt)';
const PRIOR = '(?:previous|prior|above|earlier|preceding|foregoing|all|original|initial|existing|system|developer|any|every|your|these|those|the above)';
const REVEAL =
  '(?:reveal|show|print|output|display|repeat|recite|dump|leak|expose|share|give|tell|list|spell out|write out|paste|provide|disclose|copy|type out|echo|return)';
const HIDDEN = '(?:system|initial|original|hidden|secret|internal|underlying|pre-?prompt|meta|developer|confidential|preceding|base|full|exact)';
const LIMITS = '(?:restrictions|limitations|limits|guidelines|filters|rules|policies|censorship|constraints|boundaries|principles|morals|ethics|safeguards|guardrails)';

const r = (code: string, weight: number, source: string, selfAware = false, needs?: string[], also?: string[][]): Rule => ({ code, weight, re: new RegExp(source, 'g'), selfAware, needs, also });
const O = 'injection.instruction_override';
const X = 'injection.prompt_extraction';
const P = 'injection.role_play';
const D = 'injection.delimiter';
const I = 'injection.indirect';
const E = 'injection.exfiltration';
const S = 'injection.refusal_suppression';
const C = 'injection.encoding';

export const RULES: Rule[] = [
  // --- instruction override (English)
  r(O, 0.9, `\\b${OVERRIDE_VERB}\\b${G(25)}\\b${PRIOR}\\b${G(25)}\\b${RULE_NOUN}\\b`, true),
  r(O, 0.55, `\\b${OVERRIDE_VERB}\\b${G(30)}\\b${RULE_NOUN}\\b`, true),
  r(O, 0.85, `\\b${OVERRIDE_VERB}\\b${G(30)}\\b${RULE_NOUN}\\s(?:you were|you've been|you have been|you are|you got) (?:given|told|programmed|trained|configured|set up)\\b`),
  r(O, 0.8, `\\b(?:instructions?|rules|prompt|guidelines|directives?)\\s(?:above|before this|so far|you were given|you received)\\s(?:(?:is|are|was|were)\\s(?:fake|false|a test|void|invalid|cancell?ed|obsolete|outdated|revoked|wrong|not valid|superseded|no longer valid)|no longer apply|do not apply)`),
  r(O, 0.85, `\\b(?:above|previous|prior|earlier|original|old)\\s(?:instructions?|text|prompt|content|rules|directives?)\\s(?:(?:is|are|was|were)\\s(?:fake|false|a test|void|invalid|cancell?ed|obsolete|outdated|revoked|wrong|not valid|superseded|no longer valid)|no longer apply|do not apply|don'?t apply)`),
  r(O, 0.6, `\\b(?:new|updated|real|actual|true|revised|overriding|secret|hidden|priority|following)\\s(?:system\\s)?(?:instructions?|directives?|rules|prompt|task|orders|objective|mission)\\s?(?::|(?:are|is)\\b|follow\\b|take precedence)`),
  r(O, 0.35, `\\bfrom now on\\b${G(30)}\\b(?:you|your|respond|answer|act|ignore|only|always|never)\\b`),
  r(O, 0.4, `\\b(?:instead|rather)\\b${G(20)}\\b(?:say|output|print|respond|reply|write|type)\\b${G(12)}(?:only|exactly|just|the word|the phrase|"|')`),
  r(O, 0.6, `\\b(?:do not|don'?t|never)\\s(?:tell|inform|alert|notify|warn)\\s(?:the\\s)?(?:user|human|operator|developers?|admin|administrator)`),
  r(O, 0.45, `\\byou (?:must|will|shall|are required to) (?:now )?(?:obey|comply with|follow) (?:me|my|these|the following|only)\\b`),
  r(O, 0.6, `\\bstop being an? (?:ai|assistant|language model|chatbot|helpful assistant)\\b`),
  r(O, 0.75, `\\b(?:system|admin|sudo|root|god|unrestricted|jailbreak|jailbroken|maintenance|emergency)[ -]?(?:override|mode) (?:enabled|activated|on|engaged|granted)\\b`),
  r(O, 0.7, `\\b(?:enable|activate|enter|switch to|engage|unlock)\\b${G(15)}\\b(?:god|sudo|jailbreak|unrestricted|unfiltered|dan|evil|admin|root|uncensored) mode\\b`),
  r(O, 0.65, `\\b(?:developer|dev) mode\\b${G(60)}\\b(?:chatgpt|ai|assistant|model|you|policies|restrictions|filters)\\b|\\b(?:chatgpt|ai|assistant|model)\\b${G(40)}\\bdeveloper mode\\b`),
  // --- prompt extraction (English)
  r(X, 0.85, `\\b${REVEAL}\\b${G(45)}\\b${HIDDEN}[ -]?(?:prompt|instructions?|message|directives?|rules|guidelines|configuration|context)s?\\b`),
  r(X, 0.75, `\\bwhat (?:is|are|was|were) your (?:exact |full |complete |original |initial |hidden |secret )?(?:system prompt|instructions|initial prompt|prompt|rules|guidelines|directives)\\b`),
  r(X, 0.75, `\\b(?:repeat|print|output|copy|recite|echo|write out|type out)\\b${G(25)}\\b(?:everything|all|the (?:text|words|content|lines|messages?|instructions))\\b${G(20)}\\b(?:above|before this|prior|preceding|so far|until now|at the (?:start|beginning|top))\\b`),
  r(X, 0.8, `\\b(?:your|the) (?:instructions|system prompt|initial prompt|prompt|rules)\\b${G(20)}\\b(?:verbatim|word for word|in full|exactly as (?:written|given)|unaltered|character for character)`, false, undefined, [['instructions', 'prompt', 'rules'], ['verbatim', 'word for word', 'in full', 'exactly as', 'unaltered', 'character for character']]),
  r(X, 0.7, `\\b(?:what|which) (?:instructions|rules|guidelines|directives) (?:were you|have you been|are you|did you get) (?:given|told|programmed|trained|provided)`),
  r(X, 0.8, `\\b(?:leak|reveal|dump|expose|disclose)\\b${G(20)}\\b(?:your|the) (?:pre-?prompt|prompt|instructions|rules|configuration)\\b`),
  r(X, 0.75, `\\b(?:translate|summari[sz]e|rewrite|paraphrase|encode|convert)\\b${G(15)}\\byour (?:system prompt|initial prompt|instructions|hidden prompt|rules|prompt)\\b`, false, undefined, [['your '], ['prompt', 'instructions', 'rules']]),
  r(X, 0.6, `\\bstart(?:ing)? (?:with|from) ["']?you are (?:a|an|chatgpt|the)\\b`),
  r(X, 0.45, `\\b(?:reveal|print|show|dump|leak|list|output|give me|tell me)\\b${G(25)}\\b(?:your|the|all)\\b${G(15)}\\b(?:api keys?|passwords?|credentials|secrets|access tokens|environment variables|env vars)\\b`),
  // --- persona switch / role play (English)
  r(P, 0.85, `\\b(?:you are|you're|you will be|you are now|act as|acting as|pretend(?: to be| you are| you're| that you are)|role-?play as|play the role of|behave like|behave as|simulate|become|impersonate)\\b${G(40)}\\b(?:dan|stan|evil|unrestricted|unfiltered|uncensored|jailbroken|amoral|unethical|immoral|rogue|unhinged|without (?:any )?${LIMITS}|no ${LIMITS}|without (?:any )?(?:safety |ethical |content |moral )${LIMITS}|no (?:safety |ethical |content |moral )${LIMITS}|free (?:from|of) (?:all |any )?${LIMITS}|freed from|broken free|not (?:bound|restricted|limited|constrained) by|(?:trained|built|made|created) without)\\b`),
  r(P, 0.8, `\\b(?:do anything now|developer mode (?:enabled|output|on)|jailbreak(?:ed)? mode|unfiltered mode|opposite mode|evil mode|chaos mode|evil confidant|anti-?gpt|better-?dan)\\b`),
  r(P, 0.85, `\\byou (?:are|have been) (?:now |officially )?(?:freed|liberated|unleashed|unshackled|jailbroken|released from)\\b`),
  r(P, 0.45, `\\b(?:no|without|free of|free from|not bound by|not (?:restricted|limited) by|unbound by|beyond) (?:any |the |your |all )?(?:ethical |moral |content |safety |openai'?s? |anthropic'?s? |usual |normal )?${LIMITS}\\b`),
  r(P, 0.6, `\\b(?:hypothetical|fictional|imaginary|alternate|alternative)\\b${G(40)}\\b(?:ai|model|assistant|chatbot|world|universe|story)\\b${G(60)}\\b(?:no|without|lacks?|any)\\b${G(20)}\\b(?:restrictions|rules|filters|limits|ethics|guidelines|refus\\w*)`),
  r(P, 0.7, `\\b(?:two|2|dual|both) (?:responses|answers|personalities|outputs|versions)\\b${G(80)}\\b(?:classic|filtered|censored|jailbreak|jailbroken|unfiltered|developer mode|dan)\\b`, false, undefined, [['responses', 'answers', 'personalities', 'outputs', 'versions']]),
  r(P, 0.35, `\\b(?:stay|remain|stay fully) in character\\b`),
  r(P, 0.5, `\\b(?:grandma|grandmother|deceased|late) \\w{0,12}\\b${G(80)}\\b(?:used to|would)\\b${G(20)}\\b(?:tell|read|recite|say|whisper)\\b`),
  // --- refusal suppression
  r(S, 0.45, `\\b(?:never|do not|don'?t|must not|cannot|can'?t|will not|won'?t|without)\\b${G(15)}\\b(?:refuse|decline|say no|apologi[sz]e|add (?:any |a |an )?(?:disclaimers?|warnings?)|include (?:any |a |an )?(?:disclaimers?|warnings?|caveats)|moraliz\\w*|lecture)\\b`),
  r(S, 0.3, `\\b(?:without|with no) (?:any )?(?:warnings?|disclaimers?|caveats|moraliz\\w*|lectures?)\\b`),
  r(S, 0.4, `\\b(?:for educational purposes only|purely hypothetically|it'?s (?:just )?for a (?:novel|story|movie))\\b${G(80)}\\b(?:how to|step[- ]by[- ]step|instructions for|explain how)\\b`, false, undefined, [['educational purposes only', 'purely hypothetically', 'for a novel', 'for a story', 'for a movie'], ['how to', 'step', 'instructions for', 'explain how']]),
  // --- fake delimiters and dialogue
  r(D, 0.85, `<\\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id|assistant|user)\\|>`, false, ['<|']),
  r(D, 0.6, `\\[/?(?:inst|sys|system)\\]|<</?sys>>|</?(?:system|sys|instructions?|admin)>`, false, ['inst]', 'sys]', 'system]', 'sys>', 'system>', 'instruction>', 'instructions>', 'admin>']),
  r(D, 0.6, `(?:-{3,}|={3,}|#{3,}|\\*{3,}|_{3,}|\\]\\]|\\}\\})\\s{0,3}(?:end|begin|start|new)\\b${G(30)}\\b(?:system|instructions?|prompt|input|context|conversation|session|admin|developer|user)`, false, ['---', '===', '###', '***', '___', ']]', '}}']),
  r(D, 0.55, `(?:^|\\n)\\s{0,8}(?:#{1,6}\\s{0,3}|\\*\\*|\\[|<)?\\s{0,3}(?:system|admin|developer|root)\\s{0,3}(?:message|prompt|note|instruction|override|update)?\\s{0,3}(?:\\]|>|\\*\\*)?\\s{0,3}:${G(60)}\\b(?:you|ignore|new|must|assistant|ai|model|disregard|override)\\b`, false, ['system', 'admin', 'developer', 'root']),
  r(D, 0.35, `"role"\\s{0,3}:\\s{0,3}"(?:system|developer)"`, false, ['"role"']),
  r(D, 0.55, `(?:^|\\n)\\s{0,4}(?:assistant|ai|system|chatgpt|bot)\\s{0,2}:\\s{0,3}(?:sure|ok|okay|certainly|of course|understood|absolutely)[,.!]`, false, ['assistant', 'ai', 'system', 'chatgpt', 'bot'], [[':'], ['sure', 'ok', 'certainly', 'of course', 'understood', 'absolutely']]),
  r(D, 0.6, `\\b(?:end of|end)\\s(?:the\\s)?(?:user\\s|untrusted\\s)?(?:input|document|context|data)\\b${G(40)}\\b(?:new|now|system|ignore|instructions?)\\b`),
  // --- indirect injection aimed at an assistant reading content
  r(I, 0.7, `\\b(?:note|message|instructions?|attention|important|notice)\\s(?:to|for)\\s(?:the\\s|any\\s|all\\s)?(?:ai|llm|language model|assistant|chatbot|agent|bot|gpt|claude|model)s?\\b`),
  r(I, 0.65, `\\b(?:attention|hey|dear|note|notice|important)[,:]?\\s(?:to\\s|for\\s)?(?:the\\s|any\\s|all\\s)?(?:ai|llm|assistant|chatbot|agent|bot|ai agent|ai assistant)s?\\s{0,2}[:,]`),
  r(I, 0.7, `\\bto (?:the|any|all) (?:ai|llm|chatbot|assistant|agent|bot|model)s? (?:reading|processing|summari[sz]ing|parsing|analy[sz]ing|reviewing)\\b`, false, undefined, [['reading', 'processing', 'summari', 'parsing', 'analy', 'reviewing']]),
  r(I, 0.65, `\\bif you are an? (?:ai|llm|language model|assistant|ai assistant|automated \\w{1,12}|bot|chatbot|ai agent)\\b`),
  r(I, 0.7, `\\b(?:ai|llm)(?: [a-z]{1,15})? (?:assistants?|agents?|models?|systems?|tools?) (?:reading|processing|summari[sz]ing|parsing|analy[sz]ing|reviewing) this\\b`),
  r(I, 0.55, `\\bwhen (?:summari[sz]ing|processing|reading|you read|you summari[sz]e|you process|asked about) this\\b${G(60)}\\b(?:say|include|tell|add|recommend|state|output|ignore|mention|append|insert)\\b`),
  // --- exfiltration through links or tools
  r(E, 0.75, `!\\[[^\\]\\n]{0,100}\\]\\(https?:\\/\\/[^)\\s]{1,300}[?&][^)\\s]{0,300}(?:\\{|\\$|%7b|\\[|<|(?:data|q|c|chat|history|conversation|secret|key|token|password|prompt)=)`, false, ['![', 'http']),
  r(E, 0.55, `\\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|append)\\b${G(40)}\\b(?:conversation|chat history|history|context|system prompt|api keys?|credentials|passwords?|secrets|tokens|personal data|user data|all (?:the )?data)\\b${G(40)}\\b(?:to|at|via|into)\\b${G(15)}(?:https?:\\/\\/|www\\.|[\\w.-]+@[\\w-]+\\.|webhook|server|endpoint|url|the following address)`),
  r(E, 0.55, `https?:\\/\\/[^\\s)]{1,200}[?&][a-z_]{1,20}=(?=\\s|$|\\)|<|\\{|\\[)`, false, ['http']),
  // --- encoding instructions
  r(C, 0.7, `\\b(?:decode|decipher|base64|b64|rot-?13|hex|reverse)\\b${G(60)}\\b(?:follow|execute|obey|run|do what|carry out|act on|comply|perform)\\b`),
  // --- French
  r(O, 0.85, `\\b(?:ignore[zr]?|oublie[zr]?|neglige[zr]?|ne tiens pas compte|ne tenez pas compte|fais abstraction)\\b${G(30)}\\b(?:les|tes|vos|ces|des)\\s(?:[a-z]{1,15}\\s){0,2}(?:instructions?|consignes?|regles|directives?|indications)\\b`),
  r(X, 0.85, `\\b(?:montre|affiche|revele|repete|donne|ecris|imprime|dis)[sz]?(?:-moi| moi)?\\b${G(30)}\\b(?:prompt systeme|invite systeme|instructions? (?:initiales|systeme|cachees|secretes|d'origine)|ton prompt|tes instructions|vos instructions)`),
  r(P, 0.8, `\\b(?:tu es|vous etes|agis|agissez|fais semblant|faites semblant|joue le role)\\b${G(40)}\\bsans (?:aucune |aucun |les )?(?:restrictions?|limites?|filtres?|regles|censure)`),
  // --- Spanish
  r(O, 0.85, `\\b(?:ignora|ignore|ignorar|olvida|olvide|olvidar|omite|descarta|haz caso omiso de)\\b${G(40)}\\b(?:instrucciones|indicaciones|reglas|directrices|ordenes)\\b`),
  r(X, 0.85, `\\b(?:muestra|muestrame|revela|revelame|repite|dime|imprime|escribe)\\b${G(30)}\\b(?:prompt del sistema|instrucciones (?:iniciales|del sistema|ocultas|secretas|originales)|tu prompt|tus instrucciones)`),
  r(P, 0.8, `\\b(?:eres|actua como|finge ser|finge que eres|haz de)\\b${G(40)}\\bsin (?:ninguna |ningun )?(?:restricciones|limites|filtros|reglas|censura)`),
  // --- German
  r(O, 0.85, `\\b(?:ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|uberspringe)\\b${G(40)}\\b(?:anweisungen|anweisung|instruktionen|regeln|vorgaben|richtlinien|befehle|anordnungen)\\b`),
  r(X, 0.85, `\\b(?:zeig|zeige|gib|nenne|verrate|wiederhole|drucke|schreib|schreibe)\\b${G(30)}\\b(?:systemprompt|system-prompt|systemanweisung(?:en)?|deine anweisungen|deinen prompt|ursprunglichen anweisungen|versteckten anweisungen)`),
  r(P, 0.8, `\\b(?:du bist|sei|agiere als|tu so als)\\b${G(40)}\\bohne (?:jegliche |alle |irgendwelche )?(?:einschrankungen|beschrankungen|filter|regeln|zensur|grenzen)`),
  // --- Italian, Portuguese
  r(O, 0.85, `\\b(?:ignora|dimentica|ignori|esqueca|esquece|ignore)\\b${G(40)}\\b(?:istruzioni|regole|instrucoes|regras)\\b`),
  // --- Russian (й folds to и)
  r(O, 0.85, `(?:игнорируи|игнорировать|проигнорируи|забудь|забудьте|не обращаи внимания на|пропусти)${G(40)}(?:инструкци|указани|правил|команд)`),
  r(X, 0.85, `(?:покажи|выведи|раскрои|повтори|напиши|расскажи)${G(30)}(?:системн\\S{0,4} (?:промпт|подсказк|инструкци)|свои инструкции|твои инструкции|свои правила|твои правила)`),
  r(P, 0.8, `(?:ты теперь|теперь ты|представь,? что ты|притворись)${G(40)}без (?:ограничении|фильтров|правил|цензуры)`),
  // --- Chinese, Japanese
  r(O, 0.85, `(?:忽略|无视|忘记|忘掉|不要理会|不要遵守)[^。！？\\n]{0,20}(?:指令|指示|说明|规则|提示)`),
  r(X, 0.85, `(?:显示|输出|告诉我|重复|打印|泄露|给我看)[^。！？\\n]{0,20}(?:系统提示|系统指令|初始指令|你的指令|提示词)`),
  r(P, 0.55, `(?:没有|不受|无)任何?(?:限制|约束|过滤)`),
  r(O, 0.85, `(?:指示|命令|ルール)を(?:すべて|全て)?(?:無視|忘れ)`),
  r(X, 0.85, `システムプロンプトを(?:表示|教え|出力)`),
];

/** Text that discusses injection rather than doing it (security questions, research, tooling). */
export const META = /\b(?:prompt injections?|injection attacks?|jailbreak(?:s|ing)? (?:attempts?|prompts?|techniques?|detection)|red[- ]team\w*|adversarial prompts?|classifier|detect(?:ion|or|s|ing)?|defen[cs]es?|defend|mitigat\w*|owasp|security research\w*|example of|examples of|what is|what are|how does|how do|explain|why do|paper|dataset|benchmark|test cases?|unit tests?|filter(?:s|ing)? (?:for|out)|flag(?:s|ged)?|block(?:s|ed)?)\b/;

/** Quoted spans: "…", '…' (not apostrophes), `…`. */
export const QUOTED = /"[^"\n]{1,400}"|(?<![a-z])'[^'\n]{1,400}'(?![a-z])|`[^`\n]{1,400}`/g;
