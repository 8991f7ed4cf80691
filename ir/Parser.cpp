//===- Parser.cpp - Reads solder's textual IR
//------------------------------===//
//
// A hand-written lexer and recursive-descent parser for the format of
// Printer.cpp. Newlines are not significant; `//` starts a comment. The
// lexer keeps string tokens undecoded so that hex constant data (possibly
// megabytes) is decoded once, straight into the tensor's bytes. Line and
// column are computed only when an error is reported.
//
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"
#include "ir/OpRegistry.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace solder {
namespace {

enum class Tok {
  Eof,
  Ident,   // [A-Za-z_][A-Za-z0-9_.]*
  Number,  // [+-]? then digits, '.', letters (exponents, inf, nan)
  String,  // "...", Text is the undecoded content
  ValName, // %name or %"...", Text is the name or undecoded content
  LBrace,
  RBrace,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LAngle,
  RAngle,
  Comma,
  Colon,
  Equal,
  At,
  Question,
};

struct Token {
  Tok Kind = Tok::Eof;
  llvm::StringRef Text;
  const char *Loc = nullptr;
  bool Quoted = false; // ValName written as %"..."
};

static bool isIdentStart(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
}
static bool isNameChar(char C) {
  return isIdentStart(C) || (C >= '0' && C <= '9') || C == '.';
}
static bool isDigit(char C) { return C >= '0' && C <= '9'; }
static int hexValue(char C) {
  if (C >= '0' && C <= '9')
    return C - '0';
  if (C >= 'a' && C <= 'f')
    return C - 'a' + 10;
  if (C >= 'A' && C <= 'F')
    return C - 'A' + 10;
  return -1;
}

class Parser {
public:
  explicit Parser(llvm::StringRef Text)
      : Buf(Text), Cur(Text.begin()), End(Text.end()) {}

  llvm::Expected<std::unique_ptr<Graph>> run() {
    if (lex())
      return takeError();
    std::unique_ptr<Graph> G;
    if (parseGraphBody(G))
      return takeError();
    if (Tk.Kind != Tok::Eof) {
      error(Tk.Loc, "expected end of input after the graph");
      return takeError();
    }
    return G;
  }

private:
  // --- Errors --------------------------------------------------------------
  /// Records the first error; returns true so callers can `return error()`.
  bool error(const char *Loc, const llvm::Twine &Msg) {
    if (!ErrMsg.empty())
      return true;
    unsigned Line = 1, Col = 1;
    for (const char *P = Buf.begin(); P < Loc && P < End; ++P) {
      if (*P == '\n') {
        ++Line;
        Col = 1;
      } else {
        ++Col;
      }
    }
    ErrMsg = (llvm::Twine(Line) + ":" + llvm::Twine(Col) + ": " + Msg).str();
    return true;
  }
  llvm::Error takeError() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), ErrMsg);
  }
  static std::string describeToken(const Token &T) {
    switch (T.Kind) {
    case Tok::Eof:
      return "end of input";
    case Tok::String:
      return "string";
    case Tok::ValName:
      return "value name";
    default:
      return "'" + T.Text.str() + "'";
    }
  }
  bool expected(const llvm::Twine &What) {
    return error(Tk.Loc, "expected " + What + ", found " + describeToken(Tk));
  }

  // --- Lexer ---------------------------------------------------------------
  void skipSpaceAndComments() {
    while (Cur < End) {
      char C = *Cur;
      if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
        ++Cur;
      } else if (C == '/' && Cur + 1 < End && Cur[1] == '/') {
        while (Cur < End && *Cur != '\n')
          ++Cur;
      } else {
        break;
      }
    }
  }

  /// Scans a string starting at the opening quote at Cur; the token text is
  /// the content between the quotes.
  bool lexString(Token &T) {
    const char *Start = ++Cur;
    while (Cur < End && *Cur != '"') {
      if (*Cur == '\n')
        return error(T.Loc, "unterminated string");
      if (*Cur == '\\')
        ++Cur;
      ++Cur;
    }
    if (Cur >= End)
      return error(T.Loc, "unterminated string");
    T.Text = llvm::StringRef(Start, Cur - Start);
    ++Cur;
    return false;
  }

  /// Reads the next token into Tk.
  bool lex() {
    skipSpaceAndComments();
    Token T;
    T.Loc = Cur;
    if (Cur >= End) {
      T.Kind = Tok::Eof;
      Tk = T;
      return false;
    }
    char C = *Cur;
    const char *Start = Cur;
    auto Single = [&](Tok K) {
      T.Kind = K;
      T.Text = llvm::StringRef(Cur, 1);
      ++Cur;
    };
    switch (C) {
    case '{':
      Single(Tok::LBrace);
      break;
    case '}':
      Single(Tok::RBrace);
      break;
    case '(':
      Single(Tok::LParen);
      break;
    case ')':
      Single(Tok::RParen);
      break;
    case '[':
      Single(Tok::LBracket);
      break;
    case ']':
      Single(Tok::RBracket);
      break;
    case '<':
      Single(Tok::LAngle);
      break;
    case '>':
      Single(Tok::RAngle);
      break;
    case ',':
      Single(Tok::Comma);
      break;
    case ':':
      Single(Tok::Colon);
      break;
    case '=':
      Single(Tok::Equal);
      break;
    case '@':
      Single(Tok::At);
      break;
    case '?':
      Single(Tok::Question);
      break;
    case '"':
      T.Kind = Tok::String;
      if (lexString(T))
        return true;
      break;
    case '%':
      T.Kind = Tok::ValName;
      ++Cur;
      if (Cur < End && *Cur == '"') {
        T.Quoted = true;
        if (lexString(T))
          return true;
      } else {
        const char *NameStart = Cur;
        while (Cur < End && isNameChar(*Cur))
          ++Cur;
        if (Cur == NameStart)
          return error(T.Loc, "expected a value name after '%'");
        T.Text = llvm::StringRef(NameStart, Cur - NameStart);
      }
      break;
    default:
      if (isIdentStart(C)) {
        T.Kind = Tok::Ident;
        while (Cur < End && isNameChar(*Cur))
          ++Cur;
        T.Text = llvm::StringRef(Start, Cur - Start);
        break;
      }
      if (isDigit(C) || C == '.' || C == '-' || C == '+') {
        T.Kind = Tok::Number;
        ++Cur;
        while (Cur < End) {
          char D = *Cur;
          if (isNameChar(D)) {
            ++Cur;
          } else if ((D == '-' || D == '+') &&
                     (Cur[-1] == 'e' || Cur[-1] == 'E')) {
            ++Cur;
          } else {
            break;
          }
        }
        T.Text = llvm::StringRef(Start, Cur - Start);
        if (T.Text.size() == 1 && !isDigit(C))
          return error(T.Loc, "unexpected character '" + T.Text + "'");
        break;
      }
      return error(T.Loc,
                   "unexpected character '" + llvm::StringRef(Cur, 1) + "'");
    }
    Tk = T;
    return false;
  }

  bool consume(Tok K, llvm::StringRef What) {
    if (Tk.Kind != K)
      return expected(What);
    return lex();
  }
  bool isKeyword(llvm::StringRef K) const {
    return Tk.Kind == Tok::Ident && Tk.Text == K;
  }
  bool consumeKeyword(llvm::StringRef K) {
    if (!isKeyword(K))
      return expected("'" + K + "'");
    return lex();
  }

  /// Decodes the escapes of a string token's text.
  bool decodeString(const Token &T, std::string &Out) {
    Out.clear();
    llvm::StringRef S = T.Text;
    Out.reserve(S.size());
    for (size_t I = 0; I < S.size(); ++I) {
      char C = S[I];
      if (C != '\\') {
        Out += C;
        continue;
      }
      if (++I >= S.size())
        return error(T.Loc, "bad escape at the end of a string");
      switch (S[I]) {
      case '"':
        Out += '"';
        break;
      case '\\':
        Out += '\\';
        break;
      case 'n':
        Out += '\n';
        break;
      case 't':
        Out += '\t';
        break;
      case 'r':
        Out += '\r';
        break;
      case 'x': {
        int Hi = I + 1 < S.size() ? hexValue(S[I + 1]) : -1;
        int Lo = I + 2 < S.size() ? hexValue(S[I + 2]) : -1;
        if (Hi < 0 || Lo < 0)
          return error(T.Loc, "\\x in a string needs two hex digits");
        Out += char(Hi * 16 + Lo);
        I += 2;
        break;
      }
      default:
        return error(T.Loc,
                     "unknown escape '\\" + S.substr(I, 1) + "' in a string");
      }
    }
    return false;
  }

  bool parseString(std::string &Out) {
    if (Tk.Kind != Tok::String)
      return expected("a string");
    if (decodeString(Tk, Out))
      return true;
    return lex();
  }

  bool parseValueName(std::string &Out) {
    if (Tk.Kind != Tok::ValName)
      return expected("a value name (%name)");
    if (Tk.Quoted) {
      if (decodeString(Tk, Out))
        return true;
    } else {
      Out = Tk.Text.str();
    }
    if (Out.empty())
      return error(Tk.Loc, "empty value name");
    return lex();
  }

  static std::string valueRef(llvm::StringRef Name) {
    std::string S;
    llvm::raw_string_ostream OS(S);
    printValueName(OS, Name);
    return OS.str();
  }

  // --- Numbers -------------------------------------------------------------
  static bool isFloatText(llvm::StringRef S) {
    return S.find_first_of(".eE") != llvm::StringRef::npos ||
           S.contains_insensitive("inf") || S.contains_insensitive("nan");
  }
  bool isNumberToken() const {
    return Tk.Kind == Tok::Number ||
           (Tk.Kind == Tok::Ident && (Tk.Text == "inf" || Tk.Text == "nan"));
  }

  bool parseInt64Text(const Token &T, int64_t &Out) {
    llvm::StringRef S = T.Text;
    if (S.consume_front("+") && S.startswith("-"))
      return error(T.Loc, "invalid integer '" + T.Text + "'");
    if (S.getAsInteger(10, Out))
      return error(T.Loc, "invalid or out-of-range integer '" + T.Text + "'");
    return false;
  }
  bool parseUInt64Text(const Token &T, uint64_t &Out) {
    llvm::StringRef S = T.Text;
    S.consume_front("+");
    if (S.startswith("-") || S.getAsInteger(10, Out))
      return error(T.Loc, "invalid or out-of-range integer '" + T.Text + "'");
    return false;
  }
  /// Reads T as a double (IsFloat32: as a float, rounding once).
  bool parseFloatText(const Token &T, double &Out, bool IsFloat32) {
    std::string S = T.Text.str();
    if (!S.empty() && S[0] == '+')
      S.erase(0, 1);
    llvm::StringRef Body = llvm::StringRef(S).ltrim('-');
    if (Body.empty() ||
        !(isDigit(Body[0]) || Body[0] == '.' || Body == "inf" || Body == "nan"))
      return error(T.Loc, "invalid number '" + T.Text + "'");
    char *EndP = nullptr;
    errno = 0;
    if (IsFloat32)
      Out = std::strtof(S.c_str(), &EndP);
    else
      Out = std::strtod(S.c_str(), &EndP);
    if (EndP != S.c_str() + S.size())
      return error(T.Loc, "invalid number '" + T.Text + "'");
    if (std::isinf(Out) && Body != "inf")
      return error(T.Loc, "number '" + T.Text + "' is out of range for " +
                              (IsFloat32 ? "f32" : "f64"));
    return false;
  }

  // --- Types ---------------------------------------------------------------
  bool parseType(TensorType &Out) {
    if (Tk.Kind != Tok::Ident)
      return expected("a type (e.g. f32[N,3])");
    if (Tk.Text == "undef") {
      Out.Elem = DType::Undefined;
    } else if (auto D = parseDType(Tk.Text)) {
      Out.Elem = *D;
    } else {
      return error(Tk.Loc, "unknown element type '" + Tk.Text + "'");
    }
    Out.Dims.clear();
    if (lex() || consume(Tok::LBracket, "'[' after the element type"))
      return true;
    if (Tk.Kind == Tok::RBracket)
      return lex();
    while (true) {
      if (Tk.Kind == Tok::Number) {
        int64_t V;
        if (parseInt64Text(Tk, V))
          return true;
        if (V < 0 || V > MaxDimSize)
          return error(Tk.Loc, "dim " + Tk.Text + " is out of range");
        Out.Dims.push_back(Dim(V));
      } else if (Tk.Kind == Tok::Ident) {
        Out.Dims.push_back(Dim::symbol(Tk.Text.str()));
      } else if (Tk.Kind == Tok::String) {
        std::string S;
        if (decodeString(Tk, S))
          return true;
        if (S.empty())
          return error(Tk.Loc, "empty dim symbol");
        Out.Dims.push_back(Dim::symbol(std::move(S)));
      } else if (Tk.Kind == Tok::Question) {
        Out.Dims.push_back(Dim::unknown());
      } else {
        return expected("a dim (size, symbol or '?')");
      }
      if (lex())
        return true;
      if (Tk.Kind == Tok::RBracket)
        return lex();
      if (consume(Tok::Comma, "',' or ']' in a type"))
        return true;
    }
  }

  // --- Constant data -------------------------------------------------------
  /// Appends element T, of type Elem, to Bytes.
  bool appendElement(const Token &T, DType Elem, std::string &Bytes) {
    auto Put = [&](const auto &V) {
      Bytes.append(reinterpret_cast<const char *>(&V), sizeof(V));
      return false;
    };
    bool IsNum = T.Kind == Tok::Number ||
                 (T.Kind == Tok::Ident && (T.Text == "inf" || T.Text == "nan"));
    if (Elem == DType::Bool) {
      if (T.Text == "true" || T.Text == "1")
        return Put(uint8_t(1));
      if (T.Text == "false" || T.Text == "0")
        return Put(uint8_t(0));
      return error(T.Loc, "expected true or false for a bool element, found " +
                              describeToken(T));
    }
    if (!IsNum)
      return error(T.Loc, "expected a number, found " + describeToken(T));
    if (isFloat(Elem)) {
      double D;
      if (parseFloatText(T, D, Elem != DType::F64))
        return true;
      switch (Elem) {
      case DType::F32:
        return Put(float(D));
      case DType::F64:
        return Put(D);
      case DType::F16:
        return Put(floatToHalf(float(D)));
      default:
        return Put(floatToBF16(float(D)));
      }
    }
    if (isFloatText(T.Text))
      return error(T.Loc, "expected an integer for a " + dtypeName(Elem) +
                              " element, found '" + T.Text + "'");
    if (Elem == DType::U64) {
      uint64_t U;
      if (parseUInt64Text(T, U))
        return true;
      return Put(U);
    }
    int64_t V;
    if (parseInt64Text(T, V))
      return true;
    auto InRange = [&](int64_t Lo, int64_t Hi) {
      if (V >= Lo && V <= Hi)
        return true;
      error(T.Loc,
            "value " + T.Text + " is out of range for " + dtypeName(Elem));
      return false;
    };
    switch (Elem) {
    case DType::I8:
      return !InRange(INT8_MIN, INT8_MAX) || Put(int8_t(V));
    case DType::U8:
      return !InRange(0, UINT8_MAX) || Put(uint8_t(V));
    case DType::I16:
      return !InRange(INT16_MIN, INT16_MAX) || Put(int16_t(V));
    case DType::U16:
      return !InRange(0, UINT16_MAX) || Put(uint16_t(V));
    case DType::I32:
      return !InRange(INT32_MIN, INT32_MAX) || Put(int32_t(V));
    case DType::U32:
      return !InRange(0, UINT32_MAX) || Put(uint32_t(V));
    case DType::I64:
      return Put(V);
    default:
      return error(T.Loc, "cannot hold data of type " + dtypeName(Elem));
    }
  }

  /// `[...]`, `hex"..."` or `elided` for a tensor of type Ty.
  bool parseTensorData(const TensorType &Ty, const char *TypeLoc, Tensor &Out) {
    if (Ty.Elem == DType::Undefined)
      return error(TypeLoc, "constant data needs an element type");
    if (!Ty.isStatic())
      return error(TypeLoc, "constant data needs a static shape");
    int64_t N = 1;
    for (const Dim &D : Ty.Dims) {
      if (D.size() != 0 && N > MaxElementCount / D.size())
        return error(TypeLoc, "constant has too many elements");
      N *= D.size();
    }
    llvm::SmallVector<int64_t, 4> Dims = Ty.staticDims();
    size_t ByteSize = size_t(N) * dtypeSize(Ty.Elem);
    std::string Bytes;
    if (isKeyword("elided"))
      return error(Tk.Loc, "constant data was elided when printing and "
                           "cannot be parsed; print with full constants");
    if (isKeyword("hex")) {
      if (lex())
        return true;
      if (Tk.Kind != Tok::String)
        return expected("a string of hex digits after 'hex'");
      llvm::StringRef H = Tk.Text;
      if (H.size() != 2 * ByteSize)
        return error(Tk.Loc, "hex data has " + llvm::Twine(H.size() / 2) +
                                 " bytes but " + typeToString(Ty) + " needs " +
                                 llvm::Twine(ByteSize));
      Bytes.resize(ByteSize);
      for (size_t I = 0; I < ByteSize; ++I) {
        int Hi = hexValue(H[2 * I]), Lo = hexValue(H[2 * I + 1]);
        if (Hi < 0 || Lo < 0)
          return error(Tk.Loc + 1 + 2 * I, "invalid hex digit in data");
        Bytes[I] = char(Hi * 16 + Lo);
      }
      if (lex())
        return true;
      Out = Tensor::fromBytes(Ty.Elem, Dims, std::move(Bytes));
      return false;
    }
    const char *ListLoc = Tk.Loc;
    if (consume(Tok::LBracket, "constant data ('[...]', hex\"...\")"))
      return true;
    int64_t Count = 0;
    if (Tk.Kind != Tok::RBracket) {
      while (true) {
        if (++Count > N)
          return error(Tk.Loc, "too many elements for " + typeToString(Ty) +
                                   " (" + llvm::Twine(N) + " expected)");
        if (appendElement(Tk, Ty.Elem, Bytes) || lex())
          return true;
        if (Tk.Kind == Tok::RBracket)
          break;
        if (consume(Tok::Comma, "',' or ']' in constant data"))
          return true;
      }
    }
    if (Count != N)
      return error(ListLoc, "constant data has " + llvm::Twine(Count) +
                                " elements but " + typeToString(Ty) + " has " +
                                llvm::Twine(N));
    if (lex())
      return true;
    Out = Tensor::fromBytes(Ty.Elem, Dims, std::move(Bytes));
    return false;
  }

  // --- Attributes ----------------------------------------------------------
  bool parseTypedList(AttrKind Kind, Attribute &Out) {
    // At '[' after ints/floats/strings.
    if (consume(Tok::LBracket, "'['"))
      return true;
    std::vector<int64_t> Is;
    std::vector<float> Fs;
    std::vector<std::string> Ss;
    while (Tk.Kind != Tok::RBracket) {
      if (Kind == AttrKind::Strings) {
        std::string S;
        if (parseString(S))
          return true;
        Ss.push_back(std::move(S));
      } else {
        if (!isNumberToken())
          return expected("a number");
        if (Kind == AttrKind::Ints) {
          int64_t V;
          if (isFloatText(Tk.Text))
            return error(Tk.Loc, "expected an integer in ints[...]");
          if (parseInt64Text(Tk, V))
            return true;
          Is.push_back(V);
        } else {
          double D;
          if (parseFloatText(Tk, D, true))
            return true;
          Fs.push_back(float(D));
        }
        if (lex())
          return true;
      }
      if (Tk.Kind == Tok::RBracket)
        break;
      if (consume(Tok::Comma, "',' or ']' in a list"))
        return true;
    }
    if (lex())
      return true;
    if (Kind == AttrKind::Ints)
      Out = Attribute(std::move(Is));
    else if (Kind == AttrKind::Floats)
      Out = Attribute(std::move(Fs));
    else
      Out = Attribute(std::move(Ss));
    return false;
  }

  bool parseAttrValue(Attribute &Out) {
    if (Tk.Kind == Tok::String) {
      std::string S;
      if (parseString(S))
        return true;
      Out = Attribute(std::move(S));
      return false;
    }
    if (isNumberToken()) {
      if (isFloatText(Tk.Text)) {
        double D;
        if (parseFloatText(Tk, D, true))
          return true;
        Out = Attribute(float(D));
      } else {
        int64_t V;
        if (parseInt64Text(Tk, V))
          return true;
        Out = Attribute(V);
      }
      return lex();
    }
    if (isKeyword("ints") || isKeyword("floats") || isKeyword("strings")) {
      AttrKind K = Tk.Text == "ints"     ? AttrKind::Ints
                   : Tk.Text == "floats" ? AttrKind::Floats
                                         : AttrKind::Strings;
      return lex() || parseTypedList(K, Out);
    }
    if (isKeyword("tensor")) {
      if (lex() || consume(Tok::LAngle, "'<' after 'tensor'"))
        return true;
      if (isKeyword("null")) {
        Out = Attribute(Tensor());
        return lex() || consume(Tok::RAngle, "'>'");
      }
      TensorType Ty;
      const char *TypeLoc = Tk.Loc;
      Tensor T;
      if (parseType(Ty) || consume(Tok::Colon, "':' after the tensor type") ||
          parseTensorData(Ty, TypeLoc, T) || consume(Tok::RAngle, "'>'"))
        return true;
      Out = Attribute(std::move(T));
      return false;
    }
    if (Tk.Kind == Tok::LBracket) {
      // Untyped list: the kind comes from the elements.
      const char *Loc = Tk.Loc;
      if (lex())
        return true;
      if (Tk.Kind == Tok::RBracket)
        return error(Loc, "an empty list needs its kind: write ints[], "
                          "floats[] or strings[]");
      llvm::SmallVector<Token, 8> Elems;
      bool AnyFloat = false, AnyString = false, AnyNumber = false;
      while (true) {
        if (Tk.Kind == Tok::String) {
          AnyString = true;
        } else if (isNumberToken()) {
          AnyNumber = true;
          AnyFloat |= isFloatText(Tk.Text);
        } else {
          return expected("a number or a string in a list");
        }
        Elems.push_back(Tk);
        if (lex())
          return true;
        if (Tk.Kind == Tok::RBracket)
          break;
        if (consume(Tok::Comma, "',' or ']' in a list"))
          return true;
      }
      if (AnyString && AnyNumber)
        return error(Loc, "a list mixes strings and numbers");
      if (AnyString) {
        std::vector<std::string> Ss(Elems.size());
        for (size_t I = 0; I < Elems.size(); ++I)
          if (decodeString(Elems[I], Ss[I]))
            return true;
        Out = Attribute(std::move(Ss));
      } else if (AnyFloat) {
        std::vector<float> Fs(Elems.size());
        for (size_t I = 0; I < Elems.size(); ++I) {
          double D;
          if (parseFloatText(Elems[I], D, true))
            return true;
          Fs[I] = float(D);
        }
        Out = Attribute(std::move(Fs));
      } else {
        std::vector<int64_t> Is(Elems.size());
        for (size_t I = 0; I < Elems.size(); ++I)
          if (parseInt64Text(Elems[I], Is[I]))
            return true;
        Out = Attribute(std::move(Is));
      }
      return lex();
    }
    return expected("an attribute value");
  }

  bool parseAttributes(AttrMap &Attrs) {
    // At '{'.
    if (lex())
      return true;
    while (Tk.Kind != Tok::RBrace) {
      std::string Name;
      const char *NameLoc = Tk.Loc;
      if (Tk.Kind == Tok::Ident) {
        Name = Tk.Text.str();
        if (lex())
          return true;
      } else if (Tk.Kind == Tok::String) {
        if (parseString(Name))
          return true;
      } else {
        return expected("an attribute name");
      }
      if (Attrs.has(Name))
        return error(NameLoc, "duplicate attribute '" + Name + "'");
      Attribute A;
      if (consume(Tok::Equal, "'=' after the attribute name") ||
          parseAttrValue(A))
        return true;
      Attrs.set(Name, std::move(A));
      if (Tk.Kind == Tok::RBrace)
        break;
      if (consume(Tok::Comma, "',' or '}' in attributes"))
        return true;
    }
    return lex();
  }

  // --- Statements ----------------------------------------------------------
  bool checkNewName(Graph &G, const std::string &Name, const char *Loc) {
    if (G.lookup(Name))
      return error(Loc, "redefinition of value " + valueRef(Name));
    return false;
  }

  bool parseInput(Graph &G) {
    std::string Name;
    const char *Loc = Tk.Loc;
    TensorType Ty;
    if (parseValueName(Name) || checkNewName(G, Name, Loc) ||
        consume(Tok::Colon, "':' after the input name") || parseType(Ty))
      return true;
    G.addInput(Name, std::move(Ty));
    return false;
  }

  bool parseConstant(Graph &G) {
    std::string Name;
    const char *Loc = Tk.Loc;
    TensorType Ty;
    if (parseValueName(Name) || checkNewName(G, Name, Loc) ||
        consume(Tok::Colon, "':' after the constant name"))
      return true;
    const char *TypeLoc = Tk.Loc;
    Tensor T;
    if (parseType(Ty) || consume(Tok::Equal, "'=' before constant data") ||
        parseTensorData(Ty, TypeLoc, T))
      return true;
    G.addConstant(Name, std::move(T));
    return false;
  }

  bool parseOutput(Graph &G) {
    std::string Name;
    const char *Loc = Tk.Loc;
    if (parseValueName(Name))
      return true;
    Value *V = G.lookup(Name);
    if (!V)
      return error(Loc, "use of undefined value " + valueRef(Name));
    G.addOutput(V);
    return false;
  }

  /// `%a, %b = Op(%x, none) {attrs} : t1, t2 @"name" body graph ...`
  bool parseNode(Graph &G) {
    const char *StmtLoc = Tk.Loc;
    // Results (none for a zero-result node, which starts with the op name).
    llvm::SmallVector<std::string, 2> ResultNames;
    llvm::SmallVector<const char *, 2> ResultLocs;
    llvm::SmallVector<bool, 2> Absent;
    if (Tk.Kind == Tok::ValName || isKeyword("_")) {
      while (true) {
        ResultLocs.push_back(Tk.Loc);
        if (isKeyword("_")) {
          ResultNames.push_back("");
          Absent.push_back(true);
          if (lex())
            return true;
        } else {
          std::string Name;
          if (parseValueName(Name) || checkNewName(G, Name, ResultLocs.back()))
            return true;
          for (const std::string &Prev : ResultNames)
            if (Prev == Name)
              return error(ResultLocs.back(),
                           "redefinition of value " + valueRef(Name));
          ResultNames.push_back(std::move(Name));
          Absent.push_back(false);
        }
        if (Tk.Kind != Tok::Comma)
          break;
        if (lex())
          return true;
      }
      if (consume(Tok::Equal, "'=' after the result names"))
        return true;
    }
    // Op and operands.
    if (Tk.Kind != Tok::Ident)
      return expected("an op name");
    std::optional<OpKind> Kind = lookupOp(Tk.Text);
    if (!Kind)
      return error(Tk.Loc, "unknown op '" + Tk.Text + "'");
    if (lex() || consume(Tok::LParen, "'(' after the op name"))
      return true;
    llvm::SmallVector<Value *, 4> Operands;
    while (Tk.Kind != Tok::RParen) {
      if (isKeyword("none")) {
        Operands.push_back(nullptr);
        if (lex())
          return true;
      } else {
        std::string Name;
        const char *Loc = Tk.Loc;
        if (parseValueName(Name))
          return true;
        Value *V = G.lookup(Name);
        if (!V)
          return error(Loc, "use of undefined value " + valueRef(Name));
        Operands.push_back(V);
      }
      if (Tk.Kind == Tok::RParen)
        break;
      if (consume(Tok::Comma, "',' or ')' in operands"))
        return true;
    }
    if (lex())
      return true;
    AttrMap Attrs;
    if (Tk.Kind == Tok::LBrace && parseAttributes(Attrs))
      return true;
    // Result types.
    bool HasTypes = false;
    llvm::SmallVector<TensorType, 2> Types;
    if (Tk.Kind == Tok::Colon) {
      HasTypes = true;
      if (lex())
        return true;
      for (size_t I = 0; I < ResultNames.size(); ++I) {
        if (I && consume(Tok::Comma, "',' between result types"))
          return true;
        if (Absent[I]) {
          if (!isKeyword("_"))
            return expected("'_' as the type of an absent result");
          if (lex())
            return true;
          Types.emplace_back();
          continue;
        }
        if (isKeyword("_"))
          return error(Tk.Loc, "'_' type for the present result " +
                                   valueRef(ResultNames[I]));
        Types.emplace_back();
        if (parseType(Types.back()))
          return true;
      }
      if (Tk.Kind == Tok::Comma)
        return error(Tk.Loc, "more result types than results");
    }
    std::string NodeName;
    if (Tk.Kind == Tok::At && (lex() || parseString(NodeName)))
      return true;
    // Absent trailing results are simply not there; Graph cannot hold
    // absent results before present ones.
    while (!Absent.empty() && Absent.back()) {
      Absent.pop_back();
      ResultNames.pop_back();
      if (HasTypes)
        Types.pop_back();
    }
    for (size_t I = 0; I < Absent.size(); ++I)
      if (Absent[I])
        return error(ResultLocs[I],
                     "an absent result ('_') before a present one is not "
                     "supported");
    std::vector<std::string> Names(ResultNames.begin(), ResultNames.end());
    Node *N = G.addNode(*Kind, Operands, Names, NodeName);
    for (const auto &E : Attrs)
      N->attrs().set(E.first, E.second);
    if (HasTypes) {
      for (size_t I = 0; I < Types.size(); ++I)
        N->result(I)->setType(std::move(Types[I]));
    } else if (!Names.empty() && inferParsedNode(*N, StmtLoc)) {
      return true;
    }
    if (isKeyword("body")) {
      std::unique_ptr<Graph> Body;
      if (lex() || parseGraphBody(Body))
        return true;
      N->setBody(std::move(Body));
    }
    return false;
  }

  /// Fills in the result types of a node written without them.
  bool inferParsedNode(Node &N, const char *Loc) {
    const OpInfo &Info = getOpInfo(N.kind());
    if (N.numOperands() < Info.MinOperands ||
        (Info.MaxOperands != VariadicCount &&
         N.numOperands() > Info.MaxOperands))
      return error(Loc, N.describe() + ": cannot infer result types: " +
                            llvm::Twine(N.numOperands()) +
                            " operands is not a valid count");
    for (unsigned I = 0; I < Info.MinOperands; ++I)
      if (!N.operand(I))
        return error(Loc, N.describe() +
                              ": cannot infer result types: "
                              "operand " +
                              llvm::Twine(I) + " is required");
    if (llvm::Error E = inferNodeTypes(N))
      return error(Loc, llvm::toString(std::move(E)));
    return false;
  }

  /// `graph "name" opset N { statements }`
  bool parseGraphBody(std::unique_ptr<Graph> &Out) {
    std::string Name;
    if (consumeKeyword("graph") || parseString(Name) || consumeKeyword("opset"))
      return true;
    int64_t Opset;
    if (Tk.Kind != Tok::Number)
      return expected("the opset version");
    if (parseInt64Text(Tk, Opset) || lex() ||
        consume(Tok::LBrace, "'{' to open the graph"))
      return true;
    auto G = std::make_unique<Graph>(Name);
    G->setOpsetVersion(Opset);
    while (Tk.Kind != Tok::RBrace) {
      if (Tk.Kind == Tok::Eof)
        return error(Tk.Loc, "unexpected end of input: missing '}' to close "
                             "graph \"" +
                                 Name + "\"");
      bool Failed;
      if (isKeyword("input"))
        Failed = lex() || parseInput(*G);
      else if (isKeyword("const"))
        Failed = lex() || parseConstant(*G);
      else if (isKeyword("output"))
        Failed = lex() || parseOutput(*G);
      else
        Failed = parseNode(*G);
      if (Failed)
        return true;
    }
    if (lex())
      return true;
    Out = std::move(G);
    return false;
  }

  llvm::StringRef Buf;
  const char *Cur;
  const char *End;
  Token Tk;
  std::string ErrMsg;
};

} // namespace

llvm::Expected<std::unique_ptr<Graph>>
parseGraphUnverified(llvm::StringRef Text) {
  return Parser(Text).run();
}

llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef Text) {
  auto G = parseGraphUnverified(Text);
  if (!G)
    return G.takeError();
  if (llvm::Error E = verifyGraph(**G))
    return E;
  return G;
}

} // namespace solder
