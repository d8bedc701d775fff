// Delta Kernel (Java) as an engine of `deltalog compat`: reads every table version of a request
// through Kernel's default engine, in one JVM, and writes the results as JSON.
//
//   java CompatKernelProbe <request.json> <results.json>
//       request: {"tables": [{"uri": <path>, "versions": [null | <version>, ...]}, ...]}
//       results: {"results": [{"table", "version", "observation"} |
//                             {"table", "version", "error": {"type", "message"}}, ...]}
//
// An observation has "version", "protocol", "schema", "partitionColumns", "configuration",
// "files" (path as the add action holds it, size, partition values), "rows" (deletion vectors
// applied) and "columns": per top-level column the non-null count, the null count and the sum
// of the CRC-32s of each value's canonical text (canon(); the definition of
// deltalog/compat/canon.py). Kernel has no history API: "history" is left out.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.delta.kernel.DataWriteContext;
import io.delta.kernel.Operation;
import io.delta.kernel.Scan;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Table;
import io.delta.kernel.Transaction;
import io.delta.kernel.TransactionCommitResult;
import io.delta.kernel.data.ArrayValue;
import io.delta.kernel.data.ColumnVector;
import io.delta.kernel.data.ColumnarBatch;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.data.MapValue;
import io.delta.kernel.data.Row;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.engine.FileReadResult;
import io.delta.kernel.expressions.Literal;
import io.delta.kernel.internal.InternalScanFileUtils;
import io.delta.kernel.internal.SnapshotImpl;
import io.delta.kernel.internal.actions.Protocol;
import io.delta.kernel.internal.data.ScanStateRow;
import io.delta.kernel.internal.util.Utils;
import io.delta.kernel.types.ArrayType;
import io.delta.kernel.types.BinaryType;
import io.delta.kernel.types.BooleanType;
import io.delta.kernel.types.ByteType;
import io.delta.kernel.types.DataType;
import io.delta.kernel.types.DateType;
import io.delta.kernel.types.DecimalType;
import io.delta.kernel.types.DoubleType;
import io.delta.kernel.types.FloatType;
import io.delta.kernel.types.IntegerType;
import io.delta.kernel.types.LongType;
import io.delta.kernel.types.MapType;
import io.delta.kernel.types.ShortType;
import io.delta.kernel.types.StringType;
import io.delta.kernel.types.StructField;
import io.delta.kernel.types.StructType;
import io.delta.kernel.types.TimestampNTZType;
import io.delta.kernel.types.TimestampType;
import io.delta.kernel.utils.CloseableIterable;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.DataFileStatus;
import io.delta.kernel.utils.FileStatus;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;

public final class CompatKernelProbe {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    JsonNode request = JSON.readTree(new File(args[0]));
    Engine engine = DefaultEngine.create(new Configuration());
    ArrayNode results = JSON.createArrayNode();
    for (JsonNode table : request.get("tables")) {
      String uri = table.get("uri").asText();
      String path = uri.startsWith("file:") ? uri : new File(uri).getAbsolutePath();
      JsonNode versions = table.get("versions");
      for (JsonNode version : versions) {
        ObjectNode entry = results.addObject();
        entry.put("table", uri);
        entry.set("version", version);
        String spec = version.isNull() ? "latest" : "v:" + version.asLong();
        try {
          entry.set("observation", read(engine, path, spec));
        } catch (Exception | LinkageError e) {
          ObjectNode error = entry.putObject("error");
          error.put("type", e.getClass().getSimpleName());
          String message = String.valueOf(e.getMessage());
          error.put("message", message.length() > 600 ? message.substring(0, 600) : message);
        }
      }
    }
    ObjectNode out = JSON.createObjectNode();
    out.set("results", results);
    JSON.writeValue(new File(args[1]), out);
  }

  private static Snapshot snapshot(Engine engine, String table, String spec) {
    Table t = Table.forPath(engine, table);
    if (spec.equals("latest")) {
      return t.getLatestSnapshot(engine);
    }
    if (spec.startsWith("v:")) {
      return t.getSnapshotAsOfVersion(engine, Long.parseLong(spec.substring(2)));
    }
    if (spec.startsWith("ts:")) {
      return t.getSnapshotAsOfTimestamp(engine, Long.parseLong(spec.substring(3)));
    }
    throw new IllegalArgumentException("unknown snapshot spec " + spec);
  }

  private static ObjectNode read(Engine engine, String table, String spec) throws Exception {
    Snapshot snapshot = snapshot(engine, table, spec);
    ObjectNode out = JSON.createObjectNode();
    out.put("version", snapshot.getVersion());
    Protocol protocol = snapshot.getProtocol();
    ObjectNode p = out.putObject("protocol");
    p.put("minReaderVersion", protocol.getMinReaderVersion());
    p.put("minWriterVersion", protocol.getMinWriterVersion());
    ArrayNode readerFeatures = p.putArray("readerFeatures");
    new TreeSet<>(protocol.getReaderFeatures()).forEach(readerFeatures::add);
    ArrayNode writerFeatures = p.putArray("writerFeatures");
    new TreeSet<>(protocol.getWriterFeatures()).forEach(writerFeatures::add);
    StructType schema = snapshot.getSchema();
    out.set("schema", JSON.readTree(schema.toJson()));
    ArrayNode partitionColumns = out.putArray("partitionColumns");
    snapshot.getPartitionColumnNames().forEach(partitionColumns::add);
    ObjectNode configuration = out.putObject("configuration");
    new TreeMap<>(((SnapshotImpl) snapshot).getMetadata().getConfiguration())
        .forEach(configuration::put);

    Scan scan = snapshot.getScanBuilder().build();
    Row scanState = scan.getScanState(engine);
    StructType physical = ScanStateRow.getPhysicalDataReadSchema(scanState);
    String root = ScanStateRow.getTableRoot(scanState).toString();
    if (!root.endsWith("/")) {
      root = root + "/";
    }
    ArrayNode files = out.putArray("files");
    int width = schema.length();
    long[] nonNull = new long[width];
    long[] nulls = new long[width];
    long[] sums = new long[width];
    long rows = 0;
    try (CloseableIterator<FilteredColumnarBatch> scanFiles = scan.getScanFiles(engine)) {
      while (scanFiles.hasNext()) {
        try (CloseableIterator<Row> entries = scanFiles.next().getRows()) {
          while (entries.hasNext()) {
            Row scanFile = entries.next();
            FileStatus status = InternalScanFileUtils.getAddFileStatus(scanFile);
            ObjectNode f = files.addObject();
            Row add = scanFile.getStruct(InternalScanFileUtils.ADD_FILE_ORDINAL);
            f.put("path", add.getString(add.getSchema().indexOf("path")));
            f.put("size", status.getSize());
            ObjectNode values = f.putObject("partitionValues");
            new TreeMap<>(InternalScanFileUtils.getPartitionValues(scanFile)).forEach(values::put);
            CloseableIterator<FileReadResult> results =
                engine.getParquetHandler().readParquetFiles(
                    Utils.singletonCloseableIterator(status), physical, Optional.empty());
            CloseableIterator<ColumnarBatch> physicalData = results.map(FileReadResult::getData);
            try (CloseableIterator<FilteredColumnarBatch> logical =
                Scan.transformPhysicalData(engine, scanState, scanFile, physicalData)) {
              while (logical.hasNext()) {
                FilteredColumnarBatch batch = logical.next();
                ColumnarBatch data = batch.getData();
                Optional<ColumnVector> selection = batch.getSelectionVector();
                for (int r = 0; r < data.getSize(); r++) {
                  if (selection.isPresent()
                      && (selection.get().isNullAt(r) || !selection.get().getBoolean(r))) {
                    continue;
                  }
                  rows++;
                  for (int c = 0; c < width; c++) {
                    ColumnVector vector = data.getColumnVector(c);
                    if (vector.isNullAt(r)) {
                      nulls[c]++;
                    } else {
                      nonNull[c]++;
                      sums[c] += crc(canon(vector, r));
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
    out.put("rows", rows);
    ObjectNode columns = out.putObject("columns");
    for (int c = 0; c < width; c++) {
      ObjectNode col = columns.putObject(schema.at(c).getName());
      col.put("count", nonNull[c]);
      col.put("nulls", nulls[c]);
      col.put("crc", sums[c]);
    }
    return out;
  }

  private static long crc(String text) {
    CRC32 crc = new CRC32();
    crc.update(text.getBytes(StandardCharsets.UTF_8));
    return crc.getValue();
  }

  /** A value's canonical text: numbers as integers (floats by their IEEE bits), dates as days,
   * timestamps as microseconds, decimals unscaled, binary as hex, nested values bracketed. */
  private static String canon(ColumnVector v, int i) {
    if (v.isNullAt(i)) {
      return "null";
    }
    DataType t = v.getDataType();
    if (t instanceof BooleanType) {
      return v.getBoolean(i) ? "true" : "false";
    } else if (t instanceof ByteType) {
      return Long.toString(v.getByte(i));
    } else if (t instanceof ShortType) {
      return Long.toString(v.getShort(i));
    } else if (t instanceof IntegerType || t instanceof DateType) {
      return Long.toString(v.getInt(i));
    } else if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
      return Long.toString(v.getLong(i));
    } else if (t instanceof FloatType) {
      return Long.toString(Double.doubleToLongBits(v.getFloat(i)));
    } else if (t instanceof DoubleType) {
      return Long.toString(Double.doubleToLongBits(v.getDouble(i)));
    } else if (t instanceof StringType) {
      return v.getString(i);
    } else if (t instanceof BinaryType) {
      StringBuilder hex = new StringBuilder();
      for (byte b : v.getBinary(i)) {
        hex.append(String.format("%02x", b));
      }
      return hex.toString();
    } else if (t instanceof DecimalType) {
      return v.getDecimal(i).setScale(((DecimalType) t).getScale()).unscaledValue().toString();
    } else if (t instanceof StructType) {
      List<String> parts = new ArrayList<>();
      for (int c = 0; c < ((StructType) t).length(); c++) {
        parts.add(canon(v.getChild(c), i));
      }
      return "{" + String.join(",", parts) + "}";
    } else if (t instanceof ArrayType) {
      ArrayValue a = v.getArray(i);
      List<String> parts = new ArrayList<>();
      for (int e = 0; e < a.getSize(); e++) {
        parts.add(canon(a.getElements(), e));
      }
      return "[" + String.join(",", parts) + "]";
    } else if (t instanceof MapType) {
      MapValue m = v.getMap(i);
      List<String> parts = new ArrayList<>();
      for (int e = 0; e < m.getSize(); e++) {
        parts.add(canon(m.getKeys(), e) + ":" + canon(m.getValues(), e));
      }
      return "{" + String.join(",", parts) + "}";
    }
    throw new IllegalArgumentException("no canonical text for " + t);
  }

}
