//===- Titanic.cpp - The Titanic example's input and feature columns ----===//

#include "examples/titanic/Titanic.h"

#include "estc/data.h"

#include <stdexcept>

namespace estc {
namespace examples {

namespace fc = feature_column;

data::Dataset titanic_dataset(const std::string &csv_file, int64_t batch_size,
                              std::optional<int64_t> epochs, bool shuffle,
                              uint64_t seed) {
  using data::ColumnDefault;
  data::MakeCsvOptions o;
  o.select_columns = {"Survived", "Pclass", "Sex",   "Age",     "SibSp",
                      "Parch",    "Fare",   "Cabin", "Embarked"};
  // In the file's column order, as make_csv_dataset takes them.
  o.column_defaults = {ColumnDefault::required(DType::Int64),   // Survived
                       ColumnDefault::required(DType::Int64),   // Pclass
                       ColumnDefault::required(DType::String),  // Sex
                       ColumnDefault::of(28.0f),                // Age
                       ColumnDefault::required(DType::Int64),   // SibSp
                       ColumnDefault::required(DType::Int64),   // Parch
                       ColumnDefault::required(DType::Float32), // Fare
                       ColumnDefault::of(""),                   // Cabin
                       ColumnDefault::of("unknown")};           // Embarked
  o.label_name = "Survived";
  o.num_epochs = epochs;
  o.shuffle = shuffle;
  o.shuffle_buffer_size = 1000;
  o.shuffle_seed = seed;
  data::Dataset csv = data::make_csv_dataset({csv_file}, batch_size, o);
  return csv.map([](data::Element e) {
    const data::Element &in = e[0];
    auto t = [&](const char *key) -> const TensorValue & {
      return data::tensor(in[key]);
    };
    std::vector<int64_t> sibsp = t("SibSp").values<int64_t>();
    std::vector<int64_t> parch = t("Parch").values<int64_t>();
    std::vector<std::string> cabin = t("Cabin").strings;
    int64_t n = static_cast<int64_t>(sibsp.size());
    std::vector<std::string> deck(cabin.size());
    std::vector<int64_t> alone(sibsp.size());
    for (int64_t i = 0; i < n; ++i) {
      deck[i] = cabin[i].empty() ? "unknown" : cabin[i].substr(0, 1);
      alone[i] = sibsp[i] + parch[i] == 0 ? 1 : 0;
    }
    std::map<std::string, data::Element> f;
    f.emplace("sex", in["Sex"]);
    f.emplace("n_siblings_spouses", in["SibSp"]);
    f.emplace("parch", in["Parch"]);
    f.emplace("class", in["Pclass"]);
    f.emplace("age", in["Age"]);
    f.emplace("fare", in["Fare"]);
    f.emplace("embark_town", in["Embarked"]);
    f.emplace("deck", data::Element(TensorValue::of_strings({n}, deck)));
    f.emplace("alone", data::Element(TensorValue::of<int64_t>({n}, alone)));
    return data::Element::tuple(
        {data::Element::dict(std::move(f)), std::move(e[1])});
  });
}

namespace {
struct Columns {
  fc::CategoricalColumnPtr sex, siblings, parch, klass, deck, embark, alone;
  std::shared_ptr<const fc::NumericColumn> age, fare;
  std::shared_ptr<const fc::BucketizedColumn> ageBuckets;
  fc::CategoricalColumnPtr ageXSex;
};

/// One set of column objects, shared by the linear and the deep part (a
/// model's two uses of a column are the same object).
const Columns &columns() {
  static const Columns shared = [] {
    Columns c;
    c.sex = fc::categorical_column_with_vocabulary_list(
        "sex", std::vector<std::string>{"male", "female"});
    c.siblings = fc::categorical_column_with_identity("n_siblings_spouses", 9);
    c.parch = fc::categorical_column_with_identity("parch", 7);
    c.klass = fc::categorical_column_with_vocabulary_list(
        "class", std::vector<int64_t>{1, 2, 3});
    c.deck = fc::categorical_column_with_vocabulary_list(
        "deck", std::vector<std::string>{"A", "B", "C", "D", "E", "F", "G", "T",
                                         "unknown"});
    c.embark = fc::categorical_column_with_vocabulary_list(
        "embark_town", std::vector<std::string>{"C", "Q", "S", "unknown"});
    c.alone = fc::categorical_column_with_identity("alone", 2);
    c.age = fc::numeric_column("age");
    c.fare = fc::numeric_column("fare");
    c.ageBuckets =
        fc::bucketized_column(c.age, {18, 25, 30, 35, 40, 45, 50, 55, 60, 65});
    c.ageXSex = fc::crossed_column({fc::CrossKey(c.ageBuckets), "sex"}, 100);
    return c;
  }();
  return shared;
}
} // namespace

fc::FeatureColumns titanic_linear_columns() {
  const Columns &c = columns();
  return {c.sex,    c.siblings, c.parch,      c.klass, c.deck,
          c.embark, c.alone,    c.ageBuckets, c.fare,  c.ageXSex};
}

fc::FeatureColumns titanic_dnn_columns() {
  const Columns &c = columns();
  fc::FeatureColumns out;
  for (const fc::CategoricalColumnPtr &cat :
       {c.sex, c.siblings, c.parch, c.klass, c.deck, c.embark, c.alone,
        fc::CategoricalColumnPtr(c.ageBuckets)})
    out.push_back(fc::indicator_column(cat));
  out.push_back(c.age);
  out.push_back(c.fare);
  return out;
}

estimator::CannedModel titanic_model(const std::string &kind,
                                     bool tuned_rates) {
  auto head = estimator::classifier_head(estimator::ClassifierOptions{});
  if (kind == "linear")
    return estimator::linear_model(head, titanic_linear_columns());
  if (kind == "dnn_linear_combined") {
    estimator::DNNLinearCombinedOptions o;
    o.linear_feature_columns = titanic_linear_columns();
    o.dnn_feature_columns = titanic_dnn_columns();
    o.dnn_hidden_units = {64, 32};
    if (tuned_rates) {
      o.linear_optimizer = estimator::OptimizerSpec("Ftrl", 0.2);
      o.dnn_optimizer = estimator::OptimizerSpec("Adagrad", 0.05);
    }
    return estimator::dnn_linear_combined_model(head, o);
  }
  throw std::invalid_argument("titanic: unknown model '" + kind +
                              "' (linear, dnn_linear_combined)");
}

} // namespace examples
} // namespace estc
