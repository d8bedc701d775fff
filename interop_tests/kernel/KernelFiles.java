// The live files of a Delta table's latest snapshot through Delta Kernel (Java)'s default
// engine, using only API that Kernel 3.2 to 4.4 share, so that it also runs on the releases
// that parse a version out of V2-checkpoint sidecar names (delta-io/delta#4807).
//
//   java KernelFiles <table>  ->  {"version": v, "files": [add.path, ...]}  or  {"error": "..."}

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Table;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.data.Row;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.internal.InternalScanFileUtils;
import io.delta.kernel.utils.CloseableIterator;
import java.io.File;
import org.apache.hadoop.conf.Configuration;

public final class KernelFiles {
  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode out = json.createObjectNode();
    Engine engine = DefaultEngine.create(new Configuration());
    try {
      Snapshot snapshot =
          Table.forPath(engine, new File(args[0]).getAbsolutePath()).getLatestSnapshot(engine);
      ArrayNode files = json.createArrayNode();
      try (CloseableIterator<FilteredColumnarBatch> scanFiles =
          snapshot.getScanBuilder().build().getScanFiles(engine)) {
        while (scanFiles.hasNext()) {
          try (CloseableIterator<Row> rows = scanFiles.next().getRows()) {
            while (rows.hasNext()) {
              Row add = rows.next().getStruct(InternalScanFileUtils.ADD_FILE_ORDINAL);
              files.add(add.getString(add.getSchema().indexOf("path")));
            }
          }
        }
      }
      out.put("version", snapshot.getVersion());
      out.set("files", files);
    } catch (RuntimeException e) {
      Throwable cause = e;
      StringBuilder chain = new StringBuilder();
      while (cause != null) {
        chain.append(cause.getClass().getName()).append(": ").append(cause.getMessage()).append("; ");
        cause = cause.getCause();
      }
      out.put("error", chain.toString());
    }
    System.out.println(json.writeValueAsString(out));
  }
}
